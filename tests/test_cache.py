"""The disk cache: JSON entries that cannot execute, authenticated by a MAC under the user's key,
exact round trips, atomic concurrent writes.

A pickle cache ran whatever a planted file named (a shared ``DEQRMT_CACHE_DIR`` on a cluster file
system makes that real).  Entries are now JSON with SymPy expressions as srepr text read by a
whitelisting reader (``deqrmt.symbolic._serialize``), and (issue 27) an entry counts only if its
HMAC verifies under the user's key and its symbols are those its kind declares.  The tests through
the console script are in ``test_cache_trust.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pickle
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import sympy as sp

from deqrmt.symbolic import Activation, _cache, _effort
from deqrmt.symbolic._cache import entry_key
from deqrmt.symbolic._recursion import DEQFormulas, LayerFormulas, derive_deq, derive_layer
from deqrmt.symbolic._serialize import UnsafeEntry, dumps, loads, read_srepr, registry_for
from deqrmt.symbolic._sphere import (
    DualDerivative,
    NTKMapDerivative,
    QuadraticFormulas,
    SphereFormulas,
    derive_quadratic,
    derive_sphere,
)
from deqrmt.symbolic._symbols import PaperSymbol

SRC = Path(__file__).resolve().parents[1] / "src" / "deqrmt"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DEQRMT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DEQRMT_CACHE_KEY", "a test key of more than sixteen characters")
    monkeypatch.delenv("DEQRMT_NO_CACHE", raising=False)
    return tmp_path


X_POS = sp.Symbol("x", positive=True)


def cached(kind: str, request: str, build, expect, **kw):  # type: ignore[no-untyped-def]
    """``_cache.cached`` with this file's one declared symbol, x (positive)."""
    kw.setdefault("symbols", (X_POS,))
    return _cache.cached(kind, request, build, expect, **kw)


class _Builds:
    """A build function that counts its calls."""

    def __init__(self, value: object) -> None:
        self.value = value
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


def _plant(cache: Path, kind: str, request: str, payload: bytes, *, mac: bool = True) -> Path:
    """A well-formed entry (right key, right name) around an arbitrary payload: authenticated
    under the current key (as if a key holder wrote it) unless ``mac=False``."""
    key = _cache.cache_key()
    assert key is not None
    entry = entry_key(kind, request)
    tag = _cache._mac(key, entry, payload) if mac else "0" * 64
    header = json.dumps(
        {"format": "deqrmt-cache/3", "key_id": key.key_id, "key": entry, "mac": tag}
    )
    path = cache / f"{kind}-{key.key_id[:8]}-{entry[:32]}.json"
    path.write_bytes(header.encode() + b"\n" + payload)
    return path


class _Boom:
    """Unpickling this would create the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


# --- planted, tampered and broken entries ------------------------------------------------------


def _planted_payloads(marker: Path) -> list[bytes]:
    run = f"__import__('os').system('touch {marker}')"
    return [
        pickle.dumps(_Boom(marker)),
        json.dumps({"dict": [["v", {"sympy": run}]]}).encode(),
        json.dumps({"dict": [["v", {"sympy": "Symbol.__class__"}]]}).encode(),
        json.dumps({"dict": [["v", {"sympy": f"Symbol('x').subs(1, {run})"}]]}).encode(),
        json.dumps({"dict": [["v", {"sympy": f"Function('f')({run})"}]]}).encode(),
        json.dumps({"dict": [["v", {"sympy": "Symbol('x', **{'real': True})"}]]}).encode(),
        json.dumps({"dict": [["v", {"sympy": "Integer(" + "9" * 5000 + ")"}]]}).encode(),
        json.dumps({"dict": [["v", {"sympy": "Float('1', precision=10**9)"}]]}).encode(),
        json.dumps({"dict": [["v", {"sympy": "lambda: 0"}]]}).encode(),
        json.dumps({"type": "os.system", "fields": {"command": f"touch {marker}"}}).encode(),
        json.dumps(
            {"type": "subprocess.Popen", "fields": {"args": ["touch", str(marker)]}}
        ).encode(),
    ]


@pytest.mark.parametrize("which", range(len(_planted_payloads(Path("marker")))))
def test_planted_entry_is_never_executed_and_is_rebuilt(cache: Path, which: int) -> None:
    marker = cache / "executed"
    _plant(cache, "t", "planted", _planted_payloads(marker)[which])
    build = _Builds({"v": 1})
    assert cached("t", "planted", build, dict) == {"v": 1}
    assert build.calls == 1  # rebuilt
    assert not marker.exists()
    assert cached("t", "planted", build, dict) == {"v": 1}
    assert build.calls == 1  # and the rebuilt entry replaced the planted one


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated mid-payload
        lambda b: b.split(b"\n")[0],  # header only
        lambda b: b"",
        lambda b: bytes(range(256)) * 4,  # garbage
        lambda b: b"\xff\xfe" + b,  # not UTF-8
        lambda b: b.replace(b"Integer(3)", b"Integer(4)"),  # payload changed, digest kept
    ],
)
def test_damaged_entry_is_rebuilt(cache: Path, damage) -> None:  # type: ignore[no-untyped-def]
    x = sp.Symbol("x", positive=True)
    build = _Builds({"v": 3 * x})
    cached("t", "damaged", build, dict)
    (entry,) = cache.glob("t-*.json")
    entry.write_bytes(damage(entry.read_bytes()))
    assert cached("t", "damaged", build, dict) == {"v": 3 * x}
    assert build.calls == 2


def test_valid_entry_is_used_and_is_json_text(cache: Path) -> None:
    build = _Builds({"a": (sp.Rational(1, 3), None, True), "b": [1, "two"]})
    for _ in range(3):
        assert cached("t", "valid", build, dict) == build.value
    assert build.calls == 1
    (entry,) = cache.glob("t-*.json")
    head, payload = entry.read_text(encoding="utf-8").split("\n", 1)
    assert json.loads(head)["format"] == "deqrmt-cache/3"
    json.loads(payload)  # plain JSON, no pickle anywhere


def test_entry_of_another_type_or_request_is_not_used(cache: Path) -> None:
    build = _Builds({"v": 1})
    cached("t", "r1", build, dict)
    assert cached("t", "r2", build, dict) == {"v": 1} and build.calls == 2
    other = _Builds([1, 2])
    assert cached("t", "r1", other, list) == [1, 2] and other.calls == 1


def test_budget_constants_are_in_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    before = entry_key("t", "r")
    monkeypatch.setattr(_effort, "SYMPY_INTEGRATE_CALLS", _effort.SYMPY_INTEGRATE_CALLS + 1)
    assert entry_key("t", "r") != before


def test_unwritable_directory_and_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEQRMT_NO_CACHE", raising=False)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("DEQRMT_CACHE_DIR", str(blocker / "sub"))
    build = _Builds({"v": 1})
    assert cached("t", "r", build, dict) == {"v": 1}
    assert cached("t", "r", build, dict) == {"v": 1} and build.calls == 2
    monkeypatch.setenv("DEQRMT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("DEQRMT_NO_CACHE", "1")
    cached("t", "r", build, dict)
    assert not (tmp_path / "c").exists()


def test_interrupted_write_leaves_no_temporary_file(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_cache.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cached("t", "r", _Builds({"v": 1}), dict)
    assert list(cache.iterdir()) == []


def test_value_that_cannot_round_trip_is_returned_but_not_stored(cache: Path) -> None:
    # An object the encoder does not know: returned as built, never written.
    build = _Builds({"v": object()})
    value = cached("t", "r", build, dict)
    assert value is build.value
    assert list(cache.glob("*.json")) == []
    # A symbol the kind does not declare: a bug at the call site, returned but never stored.
    build = _Builds({"v": sp.Symbol("y")})
    assert cached("t", "r", build, dict) is build.value
    assert list(cache.glob("*.json")) == []


# --- authentication: forged, stale and foreign entries (issue 27) ------------------------------


def _entry(cache: Path) -> Path:
    (entry,) = cache.glob("t-*.json")
    return entry


def _forge(entry: Path, old: bytes, new: bytes) -> None:
    head, payload = entry.read_bytes().split(b"\n", 1)
    assert old in payload
    entry.write_bytes(head + b"\n" + payload.replace(old, new))


def test_forged_entry_is_rebuilt_with_one_warning_line(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = _Builds({"v": 3 * X_POS})
    cached("t", "forged", build, dict)
    # Well formed, our key id and request, the payload doubled: only the MAC is wrong.
    _forge(_entry(cache), b"Integer(3)", b"Integer(6)")
    capsys.readouterr()
    assert cached("t", "forged", build, dict) == {"v": 3 * X_POS}
    assert build.calls == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "warning" in err and "MAC does not verify" in err
    assert cached("t", "forged", build, dict) == {"v": 3 * X_POS}  # the rebuilt entry is ours
    assert build.calls == 2 and capsys.readouterr().err == ""


def test_stale_entries_are_rebuilt_silently(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build = _Builds({"v": 1})
    cached("t", "stale", build, dict)
    entry = _entry(cache)
    head, payload = entry.read_bytes().split(b"\n", 1)
    header = json.loads(head)
    variants = [
        dict(header, format="deqrmt-cache/2"),  # another version of the format
        dict(header, key="0" * 64),  # another request or package version
        dict(header, key_id="0123456789abcdef"),  # written under another key
        {"format": "deqrmt-cache/2", "key": header["key"], "sha256": "0"},  # the old format
    ]
    capsys.readouterr()
    for calls, h in enumerate(variants, start=2):
        entry.write_bytes(json.dumps(h).encode() + b"\n" + payload)
        assert cached("t", "stale", build, dict) == {"v": 1}
        assert build.calls == calls
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "symbol",
    [
        "Symbol(\"(open({marker!r}, 'w') and 0)\", positive=True)",  # no such name is read
        "Symbol('y', positive=True)",  # a plain name, but not one this kind declares
        "Dummy('x', positive=True)",
        "Function('g')(Integer(0))",
    ],
)
def test_authenticated_entry_with_an_undeclared_symbol_is_rebuilt(
    cache: Path, capsys: pytest.CaptureFixture[str], symbol: str
) -> None:
    # Even a key holder's entry may hold only the symbols its kind declares.
    marker = cache / "executed"
    hostile = symbol.format(marker=str(marker))
    payload = json.dumps({"dict": [["v", {"sympy": f"Add(Integer(1), {hostile})"}]]}).encode()
    _plant(cache, "t", "symbols", payload)
    build = _Builds({"v": X_POS + 1})
    capsys.readouterr()
    assert cached("t", "symbols", build, dict) == {"v": X_POS + 1}
    assert build.calls == 1 and not marker.exists()
    assert "content is not what this kind of entry holds" in capsys.readouterr().err


def test_two_keys_share_a_directory_and_never_mix(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _Builds({"v": 1}), _Builds({"v": 2})  # two users' builds of the same request
    monkeypatch.setenv("DEQRMT_CACHE_KEY", "key A, shared by one cluster's workers")
    assert cached("t", "shared", a, dict) == {"v": 1}
    monkeypatch.setenv("DEQRMT_CACHE_KEY", "key B, another user on the same disk")
    assert cached("t", "shared", b, dict) == {"v": 2}  # B never reads A's entry
    assert len(list(cache.glob("t-*.json"))) == 2
    for _ in range(2):
        monkeypatch.setenv("DEQRMT_CACHE_KEY", "key A, shared by one cluster's workers")
        assert cached("t", "shared", a, dict) == {"v": 1}
        monkeypatch.setenv("DEQRMT_CACHE_KEY", "key B, another user on the same disk")
        assert cached("t", "shared", b, dict) == {"v": 2}
    assert a.calls == b.calls == 1  # and each is served from its own entry


def test_a_renamed_entry_of_another_key_is_not_used(cache: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DEQRMT_CACHE_KEY", "key A, shared by one cluster's workers")
    cached("t", "renamed", _Builds({"v": 1}), dict)
    theirs = _entry(cache)
    monkeypatch.setenv("DEQRMT_CACHE_KEY", "key B, another user on the same disk")
    key = _cache.cache_key()
    assert key is not None
    mine = cache / f"t-{key.key_id[:8]}-{entry_key('t', 'renamed')[:32]}.json"
    head, payload = theirs.read_bytes().split(b"\n", 1)
    # a valid entry of key A, renamed and relabelled as key B's: its MAC is A's
    header = dict(json.loads(head), key_id=key.key_id)
    mine.write_bytes(json.dumps(header).encode() + b"\n" + payload)
    b = _Builds({"v": 2})
    assert cached("t", "renamed", b, dict) == {"v": 2} and b.calls == 1


def test_short_key_turns_the_cache_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEQRMT_CACHE_KEY", "short")
    build = _Builds({"v": 1})
    cached("t", "short", build, dict)
    cached("t", "short", build, dict)
    assert build.calls == 2 and list(cache.iterdir()) == []


def _file_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("DEQRMT_CACHE_KEY", raising=False)
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return config / "deqrmt" / "cache.key"


def test_key_file_is_made_once_with_mode_0600_outside_the_cache(
    cache: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file_key(tmp_path_factory.mktemp("home"), monkeypatch)
    build = _Builds({"v": 1})
    cached("t", "file", build, dict)
    assert path.is_file() and not path.is_relative_to(cache)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    text = path.read_text()
    assert len(text) == 65 and int(text, 16) >= 0  # 32 random bytes in hex
    _cache._key_for.cache_clear()  # a new process reads the same file
    cached("t", "file", build, dict)
    assert build.calls == 1 and path.read_text() == text
    assert _entry(cache).name.startswith(f"t-{_cache.cache_key().key_id[:8]}-")  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", [0o644, 0o660, 0o604])
def test_key_file_others_can_read_is_not_used(
    cache: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: int,
) -> None:
    path = _file_key(tmp_path_factory.mktemp("home"), monkeypatch)
    path.parent.mkdir()
    path.write_text("ab" * 32 + "\n")
    path.chmod(mode)
    key = _cache.cache_key()
    assert key is not None and key.secret != bytes.fromhex("ab" * 32)  # a temporary key
    assert "chmod 600" in capsys.readouterr().err
    cached("t", "loose", _Builds({"v": 1}), dict)
    assert (
        list(cache.iterdir()) == []
    )  # and a temporary cache: no entry left that no run could read


def test_no_cache_needs_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file_key(tmp_path, monkeypatch)
    monkeypatch.setenv("DEQRMT_NO_CACHE", "1")
    cached("t", "none", _Builds({"v": 1}), dict)
    assert not path.parent.exists()


# --- the srepr reader --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "Symbol.__class__",
        "Symbol('x').subs",
        "eval('1')",
        "Integer(1) + Integer(2)",
        "[Integer(1)]",
        "Symbol('x', evil=True)",
        "Symbol('x', real='yes')",
        "Symbol(1)",
        "Rational(1, 0)",
        "Float('1', precision=100000)",
        "sympify('x')",
        "Lambda(Symbol('x'), Symbol('x'))",
        "Function('f', nargs=exec)(Symbol('x'))",
        "(" * 300 + "Integer(1)" + ")" * 300,
        "Add(" * 300 + "Integer(1)" + ")" * 300,
    ],
)
def test_srepr_reader_refuses_what_it_does_not_know(text: str) -> None:
    with pytest.raises(UnsafeEntry):
        read_srepr(text)


def test_srepr_reader_does_not_evaluate() -> None:
    # Evaluated, 2**(10**100) would never finish; the reader keeps the tree as written.
    big = read_srepr("Pow(Integer(2), Integer(" + "1" + "0" * 100 + "))")
    assert isinstance(big, sp.Pow) and big.exp == 10**100
    assert read_srepr("Mul(Integer(-1), Integer(2), Symbol('x'))").args[:2] == (-1, 2)


def test_srepr_reader_keeps_assumptions_and_builds_custom_functions() -> None:
    x = sp.Symbol("x", positive=True)
    e = DualDerivative(2, x / 3) + sp.Function("g")(x) ** 2 + sp.Dummy("d", real=True)
    text = sp.srepr(e, order="none")
    with pytest.raises(UnsafeEntry):
        read_srepr(text)  # DualDerivative is not a SymPy class: only when the caller allows it
    back = read_srepr(text, functions=(DualDerivative,))
    assert back == e
    assert {s.name: s.assumptions0 for s in back.free_symbols} == {
        s.name: s.assumptions0 for s in e.free_symbols
    }


# --- exact round trips of every cached value ---------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FixedPointLike:
    """Shaped like the lead's FixedPointMap: Expr fields and a dict with Symbol keys."""

    tau_sq: sp.Symbol
    rhs: sp.Expr
    derivatives: dict[sp.Symbol, sp.Expr]


def _symbols(v: object) -> dict[str, dict[str, bool]]:
    out: dict[str, dict[str, bool]] = {}
    if isinstance(v, sp.Basic):
        for s in v.atoms(sp.Symbol):
            out[s.name] = s.assumptions0
    elif dataclasses.is_dataclass(v):
        for f in dataclasses.fields(v):
            out.update(_symbols(getattr(v, f.name)))
    elif isinstance(v, dict):
        for k, x in v.items():
            out.update(_symbols(k))
            out.update(_symbols(x))
    elif isinstance(v, (tuple, list)):
        for x in v:
            out.update(_symbols(x))
    return out


def _values() -> list[tuple[object, object, tuple]]:
    from deqrmt.symbolic import library_activation, moment_set

    tau = sp.Symbol("tau_star_sq", positive=True)
    s = sp.Symbol("sigma_a2", positive=True)
    out: list[tuple[object, object, tuple]] = [
        (derive_deq(), DEQFormulas, ()),
        (derive_deq(input_injection=False, trainable=("a", "A", "B")), DEQFormulas, ()),
        (derive_layer(), LayerFormulas, ()),
        (derive_sphere(3), SphereFormulas, (DualDerivative, NTKMapDerivative)),
        (derive_quadratic(), QuadraticFormulas, ()),
        (FixedPointLike(tau, s * tau + 1, {tau: s, s: tau**2}), FixedPointLike, ()),
    ]
    try:  # the lead's fixed-point map (to be cached as "fixed-point-map")
        from deqrmt.symbolic._recursion import FixedPointMap, derive_fixed_point
    except ImportError:
        pass
    else:
        out.append((derive_fixed_point(), FixedPointMap, ()))
        out.append((derive_fixed_point(center=False), FixedPointMap, ()))
    for name in ("erf", "gelu", "relu", "elu", "tanh"):
        ms = moment_set(library_activation(name))
        moments = {k: (m.closed_form, m.zero) for k, m in ms.moments.items()}
        out.append((moments, dict, ()))
    return out


def test_every_cached_value_type_round_trips_exactly() -> None:
    for value, expect, functions in _values():
        reg = registry_for(expect, functions=functions)  # type: ignore[arg-type]
        back = loads(dumps(value, reg), reg)
        assert back == value and type(back) is type(value)
        assert _symbols(back) == _symbols(value)  # positive=True, real=True, … survive


def test_bias_derivation_round_trips() -> None:
    bias = pytest.importorskip("deqrmt.symbolic._bias")
    value = bias.derive_bias("1/(1-w)")
    reg = registry_for(bias.BiasDerivation)
    assert loads(dumps(value, reg), reg) == value


def test_derivation_read_back_from_disk_equals_the_built_one(cache: Path) -> None:
    built = derive_deq.__wrapped__(trainable=("a", "A"))  # type: ignore[attr-defined]
    from_disk = derive_deq.__wrapped__(trainable=("a", "A"))  # type: ignore[attr-defined]
    assert list(cache.glob("derive-deq-*.json"))
    assert from_disk == built
    # the formulas' own symbols (they print as LaTeX) come back as such, assumptions and all
    assert from_disk.m.mu[1] == PaperSymbol("mu1", real=True) and from_disk.m.mu[1].is_real
    assert from_disk.m.sq == PaperSymbol("sq", positive=True) and from_disk.m.sq.is_positive


def test_unregistered_dataclass_is_refused() -> None:
    value = FixedPointLike(sp.Symbol("t"), sp.S.One, {})
    with pytest.raises(TypeError):
        dumps(value, registry_for(dict))
    text = dumps(value, registry_for(FixedPointLike))
    with pytest.raises(UnsafeEntry):
        loads(text, registry_for(DEQFormulas))


# --- concurrency -------------------------------------------------------------------------------

_MOMENTS = textwrap.dedent(
    """
    import sympy as sp
    from deqrmt.symbolic import library_activation, moment_set
    ms = moment_set(library_activation("erf"))
    print(sp.srepr([(k, m.closed_form, m.zero) for k, m in sorted(ms.moments.items())]))
    """
)


def test_eight_processes_on_an_empty_cache_agree(tmp_path: Path) -> None:
    env = dict(os.environ, DEQRMT_CACHE_DIR=str(tmp_path))
    env.pop("DEQRMT_NO_CACHE", None)
    with contextlib.ExitStack() as stack:  # every child killed (if need be) and reaped
        procs = []
        for _ in range(8):
            proc = stack.enter_context(
                subprocess.Popen(
                    [sys.executable, "-c", _MOMENTS],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            stack.callback(proc.kill)  # runs before Popen.__exit__ (LIFO); harmless once done
            procs.append(proc)
        outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in outs]
    assert len({out for out, _ in outs}) == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files
    warm = subprocess.run(
        [sys.executable, "-c", _MOMENTS], env=env, capture_output=True, text=True, check=True
    )
    assert warm.stdout == outs[0][0]


# --- the effort budget -------------------------------------------------------------------------


def _spin(n: int) -> int:
    def f() -> int:
        return 1

    return sum(f() for _ in range(n))


def test_bounded_counts_calls_not_time() -> None:
    assert _effort.bounded(lambda: _spin(1000), 5000) == 1000
    assert _effort.bounded(lambda: _spin(100_000), 5000) is None
    assert _effort.bounded(lambda: 1 // 0, 5000) is None  # SymPy-style give-up: no result


def test_bounded_restores_the_tracer_and_works_off_the_main_thread() -> None:
    before = sys.gettrace()
    _effort.bounded(lambda: _spin(100_000), 5000)
    assert sys.gettrace() is before
    results: list[object] = []
    t = threading.Thread(target=lambda: results.append(_effort.bounded(lambda: _spin(10), 5000)))
    t.start()
    t.join()
    assert results == [10]


def test_same_attempt_same_verdict_within_a_process() -> None:
    # SymPy's cache is cleared, its random generators seeded and its lazy set-up done before
    # each attempt, so running another moment first changes the cost only by a few per cent.
    from deqrmt.symbolic import X, _expectation

    act = Activation("probe", sp.erf(sp.Abs(X)))
    runs = []
    for name in ("d1", "phi", "phi"):
        _, kind, k = _expectation.MOMENTS[name]
        pieces = _expectation._integrand_pieces(act, kind)
        runs.append(
            (_expectation._closed_sympy(_expectation._weight(k), pieces), _effort._last_calls)
        )
    (d1, _), (phi1, c1), (phi2, c2) = runs
    assert d1 == 0
    assert phi1 == phi2 == 2 * sp.atan(sp.sqrt(2) * _expectation.TAU) / sp.pi
    assert abs(c1 - c2) <= c1 // 10, (c1, c2)


def test_no_clock_and_no_pickle_in_symbolic() -> None:
    for path in (SRC / "symbolic").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        for banned in ("SIGALRM", "setitimer", "import pickle", "perf_counter", "time.time("):
            assert banned not in text, f"{path.name} uses {banned}"
