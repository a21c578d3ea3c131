"""An extra's package that is missing is told apart from one that is there and fails to import."""

from __future__ import annotations

from pathlib import Path

import pytest

from aigateway._optional import require


@pytest.fixture
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path for the test's own modules."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("module", ["aigateway_no_such_package", "aigateway_no_such_package.sub"])
def test_a_missing_package_says_which_extra_installs_it(module: str) -> None:
    with pytest.raises(ImportError) as caught:
        require(module, "ws", "WebSocket streaming")
    assert str(caught.value) == (
        "WebSocket streaming needs the optional package 'aigateway_no_such_package': "
        "install it with `pip install 'aigateway[ws]'`"
    )
    assert isinstance(caught.value.__cause__, ModuleNotFoundError)


@pytest.mark.parametrize(
    ("files", "module", "reason"),
    [
        # a version whose names do not match
        ({"aigw_old.py": "from os import no_such_name\n"}, "aigw_old", "cannot import name"),
        # one of its own dependencies missing
        ({"aigw_dep.py": "import aigw_no_dep\n"}, "aigw_dep", "No module named 'aigw_no_dep'"),
        # an older version that lacks the module asked for
        ({"aigw_pkg/__init__.py": ""}, "aigw_pkg.sync", "No module named 'aigw_pkg.sync'"),
    ],
)
def test_a_package_that_fails_to_import_says_to_upgrade_the_extra(
    packages: Path, files: dict[str, str], module: str, reason: str
) -> None:
    for name, text in files.items():
        (packages / name).parent.mkdir(exist_ok=True)
        (packages / name).write_text(text)
    with pytest.raises(ImportError) as caught:
        require(module, "server", "serving the mock gateway")
    message = str(caught.value)
    assert message.startswith(
        f"serving the mock gateway needs the optional package {module.split('.')[0]!r}, "
        "which is installed but failed to import ("
    )
    assert reason in message
    assert message.endswith(
        "`pip install --upgrade 'aigateway[server]'` installs the versions aigateway supports"
    )
