"""Sphinx configuration of the deqrmt site.

Build (warnings are errors)::

    pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

Nothing is fetched from the network: no intersphinx, MathJax served from the build
(sphinx-mathjax-offline).  The API reference, the CLI reference and the gallery are generated
from the code at build time (``_ext/deqrmt_docs.py``, sphinx-gallery).  ``-D plot_gallery=0``
builds without running the gallery (the test suite's quick build does).
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

# Every command and example of the build runs against a private, temporary deqrmt cache: a
# build neither reads nor writes the user's cache, and starts cold (the same bytes every time).
_CACHE = tempfile.mkdtemp(prefix="deqrmt-docs-cache-")
os.environ["DEQRMT_CACHE_DIR"] = _CACHE
os.environ.pop("DEQRMT_NO_CACHE", None)
os.environ.setdefault("MPLBACKEND", "Agg")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
# the sweep example starts an embedded Dask cluster: keep its INFO lines (in this process and in
# the worker processes, which read the environment) out of the build's output
logging.getLogger("distributed").setLevel(logging.WARNING)
os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")

import deqrmt  # noqa: E402  (after the cache is set)

project = "deqrmt"
author = "the deqrmt developers"
copyright = "the deqrmt developers"  # noqa: A001 - Sphinx's name
version = release = deqrmt.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "deqrmt_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "_ext",
    "gallery",
    "tutorials",
    "**.ipynb_checkpoints",
    # sphinx-gallery's build-wide timing table; each example shows its own running time
    "sg_execution_times.rst",
]
templates_path: list[str] = []

# ---- HTML
html_theme = "furo"
html_title = f"deqrmt {release}"
html_static_path: list[str] = []
html_show_sourcelink = True
html_theme_options = {"navigation_with_keys": True}

# ---- MyST (the Markdown pages)
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# ---- autodoc: the docstrings are the reference (Google style, as the code writes them)
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_class_signature = "separated"
autodoc_default_options = {"exclude-members": "__init__, __new__"}
autosummary_generate = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # dataclass fields documented once (as :ivar:), not twice
napoleon_use_rtype = False
napoleon_custom_sections = [("Example", "example")]
# `text` in a docstring is code, as it reads in the source
default_role = "code"
python_display_short_literal_types = True
nitpicky = False

# ---- no network at build time
intersphinx_mapping: dict[str, tuple[str, str | None]] = {}

# ---- the gallery and the tutorials: scripts executed at build time (sphinx-gallery)
sphinx_gallery_conf = {
    "examples_dirs": ["gallery", "tutorials"],
    "gallery_dirs": ["auto_gallery", "auto_tutorials"],
    "filename_pattern": r"/(plot|tutorial)_",
    "ignore_pattern": r"(__init__|_helpers)\.py",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "remove_config_comments": True,
    "min_reported_time": 0,
    "show_memory": False,
    "capture_repr": ("_repr_html_", "__repr__"),
    "first_notebook_cell": None,
    "show_signature": False,
    "write_computation_times": False,
}
