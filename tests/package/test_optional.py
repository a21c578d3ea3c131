"""An extra's package that is missing is told apart from one that is there and fails to import,
and either error gives install lines that run wherever the user is: the extra's own packages
(aigateway is not on the package index), and the extra in a checkout."""

from __future__ import annotations

import importlib.metadata
import re
import shlex
from pathlib import Path

import pytest

from aigateway._optional import require

from .test_docs_examples import install_problems, project_extras


@pytest.fixture
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path for the test's own modules."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def direct_line(message: str, extra: str) -> str:
    """``message`` with its line naming packages written ``<packages>``, once that line is
    checked to name pyproject.toml's requirements of ``extra`` (in any order)."""
    found = re.search(r"`python -m pip install (?:--upgrade )?([^-`][^`]*)`", message)
    assert found, message
    assert sorted(shlex.split(found.group(1))) == sorted(project_extras()[extra])
    return message.replace(found.group(1), "<packages>")


@pytest.mark.parametrize("module", ["aigateway_no_such_package", "aigateway_no_such_package.sub"])
def test_a_missing_package_names_the_extras_packages_and_the_checkout_line(module: str) -> None:
    with pytest.raises(ImportError) as caught:
        require(module, "server", "serving the mock gateway")
    assert direct_line(str(caught.value), "server") == (
        "serving the mock gateway needs the optional package 'aigateway_no_such_package': "
        "install it with `python -m pip install <packages>` "
        "(or, in a checkout of aigateway, `python -m pip install -e '.[server]'`)"
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
    message = direct_line(str(caught.value), "server")
    assert message.startswith(
        f"serving the mock gateway needs the optional package {module.split('.')[0]!r}, "
        "which is installed but failed to import ("
    )
    assert reason in message
    assert message.endswith(
        "`python -m pip install --upgrade <packages>` installs the versions aigateway "
        "supports (or, in a checkout of aigateway, `python -m pip install --upgrade -e '.[server]'`)"
    )


def test_without_aigateways_metadata_the_error_gives_the_checkout_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run from a source tree, uninstalled: no metadata to read the packages from."""

    def not_installed(name: str) -> list[str]:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "requires", not_installed)
    with pytest.raises(ImportError) as caught:
        require("aigateway_no_such_package", "otel", "tracing")
    assert str(caught.value) == (
        "tracing needs the optional package 'aigateway_no_such_package': in a checkout of "
        "aigateway, `python -m pip install -e '.[otel]'` installs the 'otel' extra"
    )


@pytest.mark.parametrize("extra", sorted(set(project_extras()) - {"dev"}))
def test_every_extras_errors_give_install_lines_of_the_allowed_forms(
    packages: Path, extra: str
) -> None:
    (packages / "aigw_broken.py").write_text("import aigw_no_dep\n")
    messages = []
    for module in ("aigateway_no_such_package", "aigw_broken"):
        with pytest.raises(ImportError) as caught:
            require(module, extra, "a feature")
        messages.append(str(caught.value))
    for message in messages:
        assert message.count("pip install") == 2, message
        direct_line(message, extra)
        assert install_problems(message) == [], message
        assert f"'.[{extra}]'" in message
