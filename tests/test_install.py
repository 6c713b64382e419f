"""Installed as a user installs it: the wheel (and `pip install .`) into fresh venvs outside the
checkout, then `normbench` from another directory.  No network: the venvs see this machine's
site-packages (torch is not installed again), normbench goes in with --no-deps, and the build
uses the installed setuptools (--no-build-isolation).  Skip with `-m 'not install'`."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from normbench import __version__

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.install


def _have(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"],
                          capture_output=True).returncode == 0


if not (_have("setuptools") and _have("venv")):
    pytest.skip("needs setuptools and venv to build and install offline",
                allow_module_level=True)

# the venvs must see neither this checkout nor the test run's settings
CLEAN = {k: v for k, v in os.environ.items()
         if k not in ("PYTHONPATH", "NORMBENCH_PLUGINS", "NORMBENCH_GIT_COMMIT",
                      "NORMBENCH_GIT_DIRTY", "PYTHONSAFEPATH")}
CLEAN["NORMBENCH_QUIET"] = "1"
def pip_into(venv_bin: Path) -> list:
    """This interpreter's pip installing into the venv (which has no pip of its own: its
    builds then use the setuptools it sees from this machine's site-packages)."""
    return [sys.executable, "-m", "pip", "--python", venv_bin / "python", "install", "-q",
            "--no-deps", "--no-build-isolation", "--disable-pip-version-check"]


def sh(*args, cwd, timeout=300, ok=True):
    r = subprocess.run([str(a) for a in args], cwd=cwd, env=CLEAN, capture_output=True,
                       text=True, timeout=timeout)
    if ok:
        assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-3000:])
    return r


def _tree_files() -> list[str]:
    """The checkout's files that a build sees (tracked and untracked, not ignored)."""
    r = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("needs git to list the checkout's files")
    return [f for f in r.stdout.split("\0") if f and (ROOT / f).is_file()]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(wheel, source copy): the checkout copied out of itself, and its wheel."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    files = _tree_files()
    for f in files:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, src / f)
    sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
       "--disable-pip-version-check", "-w", tmp / "dist", src, cwd=tmp)
    (wheel,) = (tmp / "dist").glob("normbench-*.whl")
    return wheel, src, files, tmp


def _venv(path: Path) -> Path:
    sh(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", path,
       cwd=path.parent)
    return path / "bin"


def test_the_wheel_holds_only_normbench_and_every_file_of_the_package(built):
    wheel, _, files, _ = built
    assert wheel.name.startswith(f"normbench-{__version__}-")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"normbench", f"normbench-{__version__}.dist-info"}, tops
    mapped = {"harness": "normbench/harness", "strategies": "normbench/strategies",
              "configs": "normbench/configs", "normbench": "normbench"}
    missing = [f for f in files if f.split("/")[0] in mapped
               and mapped[f.split("/")[0]] + f[len(f.split("/")[0]):] not in names]
    assert not missing, f"in the checkout but not in the wheel: {missing}"
    entry_points = zipfile.ZipFile(wheel).read(
        f"normbench-{__version__}.dist-info/entry_points.txt").decode()
    assert "normbench = normbench.harness.cli:main" in entry_points


def test_the_installed_wheel_runs_from_any_directory(built):
    wheel, _, _, tmp = built
    bin_ = _venv(tmp / "venv-wheel")
    sh(*pip_into(bin_), wheel, cwd=tmp)
    away = tmp / "elsewhere"
    away.mkdir()
    where = sh(bin_ / "python", "-c", "import normbench, normbench.harness.cli as c; "
               "print(normbench.__file__); print(c.__file__)", cwd=away).stdout.split()
    assert all(p.startswith(str(tmp / "venv-wheel")) for p in where), where
    nb = bin_ / "normbench"
    for flag in ("--version", "-V"):
        assert sh(nb, flag, cwd=away).stdout.strip() == f"normbench {__version__}"
    assert "Usage" in sh(nb, "-h", cwd=away).stdout
    plan = sh(nb, "run", "quick", "--dry-run", cwd=away)
    assert "plan: quick" in plan.stdout
    r = sh(nb, "run", "cpu", "--only", "disjoint_block,torch", "--out", away / "run", "rows=[5]",
           "d=[33]", "norm=rmsnorm", cwd=away, timeout=400)
    assert (away / "run" / "report.html").is_file(), r.stderr
    meta = json.loads((away / "run" / "meta.json").read_text())
    assert meta["normbench_version"] == __version__ and meta["config_name"] == "cpu"
    assert meta["git_commit"] is None and meta["git_dirty"] is None   # not a checkout
    assert meta["invocations"][0]["argv"][1:3] == ["run", "cpu"]
    import pandas as pd
    df = pd.read_csv(away / "run" / "records.csv")
    assert len(df) and (df["status"] == "ok").all()
    # a path still works, and a name that is neither says what is shipped
    sh(nb, "run", tmp / "src" / "configs" / "quick.yaml", "--dry-run", cwd=away)
    bad = sh(nb, "run", "nosuch", cwd=away, ok=False)
    assert bad.returncode == 2 and "shipped config: cpu, default" in bad.stderr, bad.stderr


def _plugin(where: Path, name: str, module_text: str, impl: str) -> Path:
    pkg = where / name
    (pkg / name).mkdir(parents=True)
    (pkg / name / "__init__.py").write_text(textwrap.dedent(module_text))
    (pkg / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=64"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{name}"
        version = "0.1"
        [project.entry-points."normbench.implementations"]
        {impl} = "{name}"
        """))
    return pkg


def test_pip_install_dot_and_entry_point_plugins(built):
    _, src, _, tmp = built
    bin_ = _venv(tmp / "venv-dot")
    sh(*pip_into(bin_), ".", cwd=src)          # `pip install .` in the checkout's copy
    away = tmp / "elsewhere-dot"
    away.mkdir()
    nb = bin_ / "normbench"
    assert sh(nb, "--version", cwd=away).stdout.strip() == f"normbench {__version__}"
    good = _plugin(tmp, "nb_good_plugin", """
        from normbench.strategies import register, get

        @register("plugged_torch", kind="baseline", deterministic_by_design=False,
                  uses_groups=False)
        def backward(x, dy, weight, mean, rstd, *, groups=None):
            \"\"\"PyTorch's backward, [d] registered by an entry point.\"\"\"
            return get("torch").fn(x, dy, weight, mean, rstd)
        """, "plugged_torch")
    sh(*pip_into(bin_), good, cwd=tmp)
    listed = sh(nb, "list", cwd=away, ok=False)
    assert listed.returncode == 0, listed.stderr
    assert "plugged_torch" in listed.stdout and "[d]" in listed.stdout   # markup escaped
    r = sh(nb, "run", "cpu", "--only", "plugged_torch", "--no-report", "--out", away / "p",
           "rows=[5]", "d=[33]", "norm=rmsnorm", cwd=away)
    assert "[1/1] ok" in r.stderr, r.stderr
    broken = _plugin(tmp, "nb_broken_plugin", "import no_such_module_anywhere\n", "broken")
    sh(*pip_into(bin_), broken, cwd=tmp)
    r = sh(nb, "list", cwd=away, ok=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("plugin nb_broken_plugin (entry point 'broken' of nb_broken_plugin)")
    assert "no_such_module_anywhere" in line
