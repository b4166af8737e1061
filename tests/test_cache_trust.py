"""The cache as data with an owner, through the console script (issues 27 and 19).

Whoever can write a cache directory (a cluster's shared ``DEQRMT_CACHE_DIR``) could plant a
symbol whose name the printer wrote into executed code, and could change "proven" digits with
a well-formed entry whose checksum they recomputed.  Now entries are authenticated by an HMAC
under the user's key and the printer names every symbol itself: a planted entry creates no
file and changes no output, a forged one changes no printed digit, and two keys share one
directory without mixing.  With no home directory nothing is created under it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

KEY_A = "key A: the test's own, shared by a cluster's workers"
KEY_B = "key B: another user of the same cache directory"
#: one command per kind of entry it reads; coefficients reads "moments", and with
#: --sensitivity also "derive-deq" (without it the general formulas come from the generated
#: module, numeric/_generated_formulas.py, and no derive-deq entry is read: issue 24)
COMMANDS = {
    "moments": ["coefficients", "relu", "--json"],
    "derive-deq": ["coefficients", "relu", "--json", "--sensitivity"],
    "sphere": ["sphere", "relu", "--json"],
    "bias": ["bias", "1/(1-w)", "--json"],
    "tanh": ["coefficients", "tanh", "--sensitivity"],
}
#: a name that runs code where it is printed verbatim into Python (today's main: it did)
HOSTILE = "(open('pwned', 'w') and 0)"
#: formulas that are arithmetic (a sum with a symbol is still an expression)
_ARITHMETIC = re.compile(r"(Add|Mul|Pow)\(")
#: where a kind's record checks itself (a bias derivation refuses an h that is not in β alone),
#: only these fields are changed: the attack must get past everything but the cache
_FIELDS = {"bias": {"q"}}


def _env(cache: Path, key: str) -> dict[str, str]:
    env = dict(os.environ, DEQRMT_CACHE_DIR=str(cache), DEQRMT_CACHE_KEY=key)
    env.pop("DEQRMT_NO_CACHE", None)
    return env


def _run(prefix: list[str], args: list[str], env: dict[str, str], cwd: Path) -> tuple[str, str]:
    cwd.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [*prefix, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def warm(
    cli_prefix: list[str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, str]]:
    """A cache filled under key A, and each command's clean output."""
    cache = tmp_path_factory.mktemp("warm-cache")
    work = tmp_path_factory.mktemp("warm-work")
    clean = {k: _run(cli_prefix, args, _env(cache, KEY_A), work)[0] for k, args in COMMANDS.items()}
    return cache, clean


def _copy(warm: tuple[Path, dict[str, str]], tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    shutil.copytree(warm[0], cache)
    return cache


def _rewrite(cache: Path, kind: str, change, mac_key: str | None = None) -> int:  # type: ignore[no-untyped-def]
    """Apply ``change`` to every arithmetic formula of every ``kind`` entry, keeping the header
    well formed: a ``sha256`` (the old format) is recomputed, as an attacker can; a ``mac`` is
    kept (nobody without the key can compute it) unless ``mac_key`` holds the key."""
    count = 0
    signer = None
    if mac_key is not None:
        from deqrmt.symbolic import _cache

        signer = _cache._key_for(mac_key, None)
    for path in sorted(cache.glob(f"{kind}-*.json")):
        if kind == "sphere" and path.name.startswith("sphere-quadratic-"):
            continue
        if signer is not None and not path.name.startswith(f"{kind}-{signer.key_id[:8]}-"):
            continue  # only the signer's own entries
        head, payload = path.read_bytes().split(b"\n", 1)
        header = json.loads(head)

        def walk(o, inside: bool):  # type: ignore[no-untyped-def]
            nonlocal count
            if isinstance(o, dict):
                if "sympy" in o and inside and _ARITHMETIC.match(o["sympy"]):
                    count += 1
                    return {"sympy": change(o["sympy"])}
                return {k: walk(v, inside or k in _FIELDS.get(kind, {k})) for k, v in o.items()}
            if isinstance(o, list):
                return [walk(v, inside) for v in o]
            return o

        new = json.dumps(walk(json.loads(payload), False), separators=(",", ":")).encode()
        if "sha256" in header:
            header["sha256"] = hashlib.sha256(new).hexdigest()
        if signer is not None:
            header["mac"] = _cache._mac(signer, header["key"], new)
        path.write_bytes(json.dumps(header).encode() + b"\n" + new)
    return count


def _planted(srepr: str) -> str:
    # adds 0 where the name is run (so the output would not even change): nobody would notice
    return f"Add({srepr}, Symbol({HOSTILE!r}))"


def _planted_function(srepr: str) -> str:
    # an undefined function of a constant adds no free symbol: it gets past a bias record's
    # own check that q depends on β alone
    return f"Add({srepr}, Function({HOSTILE!r})(Integer(0)))"


def _doubled(srepr: str) -> str:
    return f"Mul(Integer(2), {srepr})"


@pytest.mark.parametrize("kind", ["moments", "derive-deq", "sphere", "bias"])
def test_planted_symbol_runs_nothing_and_changes_no_output(
    cli_prefix: list[str], warm: tuple[Path, dict[str, str]], tmp_path: Path, kind: str
) -> None:
    cache = _copy(warm, tmp_path)
    assert _rewrite(cache, kind, _planted_function if kind == "bias" else _planted) > 0
    work = tmp_path / "work"
    out, err = _run(cli_prefix, COMMANDS[kind], _env(cache, KEY_A), work)
    assert list(work.iterdir()) == []  # no 'pwned'
    assert out == warm[1][kind]
    assert all(
        line.startswith("deqrmt: warning: ignored the cache entry") for line in err.splitlines()
    )


def test_forged_entry_changes_no_printed_digit(
    cli_prefix: list[str], warm: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    cache = _copy(warm, tmp_path)
    assert _rewrite(cache, "derive-deq", _doubled) > 0  # α*, β*, κ* would double
    out, err = _run(cli_prefix, COMMANDS["tanh"], _env(cache, KEY_A), tmp_path / "work")
    assert out == warm[1]["tanh"]
    (line,) = err.splitlines()  # one warning line, naming the entry
    assert "warning" in line and "derive-deq-" in line and "MAC does not verify" in line
    out, err = _run(cli_prefix, COMMANDS["tanh"], _env(cache, KEY_A), tmp_path / "work")
    assert out == warm[1]["tanh"] and err == ""  # the entry was rebuilt: silent from now on


def test_two_keys_share_a_cache_directory_and_never_mix(
    cli_prefix: list[str], warm: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    cache = _copy(warm, tmp_path)
    before = {p.name for p in cache.iterdir()}
    out, err = _run(cli_prefix, COMMANDS["tanh"], _env(cache, KEY_B), tmp_path / "work")
    assert out == warm[1]["tanh"] and err == ""
    mine = {p.name for p in cache.iterdir()} - before
    assert {n.split("-")[0] for n in mine} >= {"moments", "derive"}  # B's own entries, beside A's
    # Key A's holder (trusted by A, not by B) doubles A's formulas and signs them with key A.
    assert _rewrite(cache, "derive-deq", _doubled, mac_key=KEY_A) > 0
    out_b, err_b = _run(cli_prefix, COMMANDS["tanh"], _env(cache, KEY_B), tmp_path / "work")
    assert out_b == warm[1]["tanh"] and err_b == ""  # B never reads A's entries
    out_a, _ = _run(cli_prefix, COMMANDS["tanh"], _env(cache, KEY_A), tmp_path / "work")
    assert out_a != warm[1]["tanh"]  # (the doubled entry is A's own: A does read it)


def test_no_home_directory_creates_nothing_under_it(cli_prefix: list[str], tmp_path: Path) -> None:
    home = tmp_path / "absent" / "home"  # HOME=/nonexistent, without touching /
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, HOME=str(home), TMPDIR=str(tmp))
    for name in ("DEQRMT_CACHE_DIR", "DEQRMT_CACHE_KEY", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        env.pop(name, None)
    env.pop("DEQRMT_NO_CACHE", None)
    out, err = _run(cli_prefix, ["coefficients", "relu"], env, tmp_path / "work")
    assert "tau_star" in out
    assert not (tmp_path / "absent").exists()
    (line,) = err.splitlines()  # said once
    assert "does not exist" in line and "temporary cache" in line
    assert list(tmp.iterdir()) == []  # the temporary cache is removed at exit
