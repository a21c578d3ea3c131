"""The API reference follows the code: parameter tables come from the TypedDicts, the error
tree from the exception classes, every public name is on exactly one page, and the built site
shows one signature per method, tables that fit a 1280 px window, and no build sources."""

from __future__ import annotations

import ast
import html
import importlib
import importlib.util
import inspect
import pkgutil
import re
import subprocess
import sys
from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from types import ModuleType
from typing import Any, get_type_hints

import pytest

import aigateway
from aigateway.types.chat_params import ChatCompletionCreateParams
from aigateway.types.service_params import ImageGenerateParams

from .._paths import ROOT, SRC
from ._browser import measure

sys.path.insert(0, str(ROOT / "docs" / "hooks"))  # the docs' own code, not in the package

from reference_data import (
    client_resources,
    error_tree,
    method_params,
    param_fields,
)

PAGES = ROOT / "docs" / "reference"
MAX_PAGE_BYTES = 300_000
"""A reference page's HTML, navigation included: the largest is about 200 KB (the single page
they replace was 1.1 MB)."""


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reference_hook", ROOT / "docs/hooks/reference.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_are_the_fields_of_the_definition() -> None:
    assert method_params("chat.completions.create") is ChatCompletionCreateParams
    assert method_params("images.generate") is ImageGenerateParams
    rows = param_fields(ChatCompletionCreateParams)
    assert sorted(row.name for row in rows) == sorted(get_type_hints(ChatCompletionCreateParams))
    assert [row.name for row in rows if row.required] == ["model", "messages"]
    assert all(row.doc for row in rows), [row.name for row in rows if not row.doc]


def test_limits_come_from_the_checks() -> None:
    rows = {row.name: row for row in param_fields(ChatCompletionCreateParams)}
    assert rows["temperature"].limits == "0 to 2"
    assert rows["temperature"].type == "float"
    assert "at most 4 items" in rows["stop"].limits
    assert "needs logprobs" in rows["top_logprobs"].limits
    table = load_hook().params_table("chat.completions.create")
    assert "| `temperature` | float<br>*0 to 2* | Randomness" in table
    assert "| `model` (required) | str | " in table
    assert table.startswith('<div class="keywords" markdown>')


def test_every_method_taking_keywords_gets_a_table() -> None:
    hook = load_hook()
    tables = 0
    for path, cls in client_resources():
        for name, member in hook.public_members(cls):  # with those written once for the twins
            if not callable(member):
                continue
            signature = inspect.signature(member, follow_wrapped=False)
            takes_keywords = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
            if takes_keywords or hasattr(member, "__params_type__"):
                assert hook.params_table(f"{path}.{name}").count("\n|") >= 2, f"{path}.{name}"
                tables += 1
    assert tables >= 20


def test_every_resource_is_placed_on_one_page() -> None:
    hook = load_hook()
    placed: dict[str, list[str]] = defaultdict(list)
    for page in sorted(PAGES.glob("*.md")):
        for path in hook.RESOURCE.findall(page.read_text(encoding="utf-8")):
            placed[path].append(page.name)
    assert {path: pages for path, pages in placed.items() if len(pages) > 1} == {}
    assert set(placed) == set(hook.documented_resources())
    assert "chat" not in placed  # only holds chat.completions, which has its section


def test_error_tree_holds_every_public_error() -> None:
    names: list[str] = []

    def walk(node: object) -> None:
        names.append(node.name)  # type: ignore[attr-defined]
        for child in node.children:  # type: ignore[attr-defined]
            walk(child)

    walk(error_tree())
    public = {
        name
        for name in aigateway.__all__
        if isinstance(getattr(aigateway, name), type)
        and issubclass(getattr(aigateway, name), aigateway.AIGatewayError)
    }
    assert public <= set(names)
    assert len(names) == len(set(names))
    hook = load_hook()
    listing = hook.errors_list()
    assert "    - `APIStatusError`: The gateway answered with a non-2xx status." in listing
    section = hook.errors_section()
    assert "::: aigateway.errors.RateLimitError\n" in section
    assert "::: aigateway.errors.MaxRoundsExceededError\n" in section


@pytest.mark.parametrize("client_class", [aigateway.Client, aigateway.AsyncClient])
def test_client_docstring_describes_every_constructor_parameter(client_class: type) -> None:
    doc = inspect.getdoc(client_class.__init__) or ""  # one constructor, in their base
    args = doc.split("Args:\n", 1)[1]
    described = re.findall(r"^    (\w+):", args, re.MULTILINE)
    assert described == list(inspect.signature(client_class).parameters)


# The built site: one build for the tests below.


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs")
    site_dir = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", site_dir],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return site_dir


def reference_pages(site: Path) -> dict[str, str]:
    """Each built reference page's HTML, by its name (``chat``; ``index`` for the overview)."""
    pages = {"index": (site / "reference/index.html").read_text(encoding="utf-8")}
    for page in sorted((site / "reference").glob("*/index.html")):
        pages[page.parent.name] = page.read_text(encoding="utf-8")
    return pages


def doc_ids(page: str) -> list[str]:
    """The paths of the objects a page documents under a heading of their own."""
    return re.findall(r'<h[1-6] id="([\w.]+)" class="doc doc-heading"', page)


def resolve(path: str) -> tuple[ModuleType, Any] | None:
    """``(module, object)`` for a path naming a module's member, None for a deeper one."""
    module_path, _, name = path.rpartition(".")
    try:
        module = importlib.import_module(module_path)
    except ImportError:
        return None  # a class's member
    return module, getattr(module, name)


def public_modules() -> list[str]:
    """The modules whose ``__all__`` users import from."""
    found = ["aigateway", "aigateway.errors", "aigateway.shared", "aigateway.testing"]
    for package in ("aigateway.types", "aigateway.helpers"):
        path = importlib.import_module(package).__path__
        found += [
            f"{package}.{module.name}"
            for module in pkgutil.iter_modules(path)
            if not module.name.startswith("_")
        ]
    return found


def test_every_public_name_is_on_exactly_one_page(site: Path) -> None:
    names: dict[int, list[str]] = defaultdict(list)  # an object -> the names it is public as
    for module_path in public_modules():
        module = importlib.import_module(module_path)
        for name in module.__all__:
            if name != "__version__":
                names[id(getattr(module, name))].append(f"{module_path}.{name}")
    pages: dict[int, list[str]] = defaultdict(list)  # an object -> the pages documenting it
    not_public = []
    for page_name, page in reference_pages(site).items():
        for path in doc_ids(page):
            found = resolve(path)
            if found is not None:
                pages[id(found[1])].append(page_name)
                if id(found[1]) not in names:
                    not_public.append(path)
    missing = [aliases[0] for obj, aliases in names.items() if not pages[obj]]
    twice = {aliases[0]: pages[obj] for obj, aliases in names.items() if len(pages[obj]) > 1}
    assert missing == [], f"on no reference page: {missing}"
    assert twice == {}, f"on more than one: {twice}"
    assert not_public == []


def test_every_resource_method_is_documented_once(site: Path) -> None:
    hook = load_hook()
    documented = [path for page in reference_pages(site).values() for path in doc_ids(page)]
    for cls in hook.documented_resources().values():
        for name, _ in hook.public_members(cls):
            assert documented.count(f"{cls.__module__}.{cls.__name__}.{name}") == 1, name


def test_one_signature_per_function(site: Path) -> None:
    pages = reference_pages(site)
    functions = 0
    for page_name, page in pages.items():
        assert "doc-overloads" not in page, page_name
        headings = list(re.finditer(r'<h[1-6] id="([\w.]+)" class="doc doc-heading"', page))
        for heading, following in pairwise([*headings, None]):
            assert heading is not None
            block = page[heading.end() : following.start() if following else len(page)]
            if "doc-symbol-method" in block[:300] or "doc-symbol-function" in block[:300]:
                functions += 1
                assert block.count("doc-signature") == 1, (page_name, heading.group(1))
    assert functions > 100
    create = pages["chat"].split('id="aigateway.resources.chat.Completions.create"')[1]
    signature = html.unescape(re.sub(r"<[^>]+>", "", create.split("doc-signature", 1)[1]))
    signature = signature.split(")", 2)[0] + ")"
    assert "request: ChatCompletionCreateRequest | None = None" in signature
    assert "**params: Unpack[ChatCompletionCreateParams]" in signature
    assert "*args" not in signature


def test_pages_are_small_and_name_only_public_paths(site: Path) -> None:
    pages = reference_pages(site)
    assert len(pages) >= 12
    sizes = {name: len(page.encode()) for name, page in pages.items()}
    assert max(sizes.values()) < MAX_PAGE_BYTES, sizes
    headings = [
        heading
        for page in pages.values()
        for heading in re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", page, re.DOTALL)
    ]
    assert not [h for h in headings if "aigateway._" in h or re.search(r"\b_[a-z]\w*\.", h)]
    assert not [h for h in headings if re.search(r"\b__\w+__\b", h)]  # no special methods
    for expected in ("with_options", "remaining_credits", "client.chat.completions.create"):
        assert any(expected in heading for heading in headings), expected
    assert "Keyword</th>" in pages["chat"]
    assert "0 to 2" in pages["chat"]


def test_site_publishes_no_build_sources(site: Path) -> None:
    sources = [
        path.relative_to(site)
        for path in site.rglob("*")
        if path.suffix in (".py", ".pyc") or path.name == "__pycache__"
    ]
    assert sources == []
    assert not (site / "hooks").exists()


MEASURE = """<pre id="layout" hidden></pre><script>
(() => {
  const article = document.querySelector('article');
  const overflows = (box) => box.scrollWidth > box.clientWidth + 1;
  const tables = [...article.querySelectorAll('table')].map((table) => {
    let hidden = 0;
    for (let box = table; box && box !== article; box = box.parentElement) {
      if (overflows(box)) { hidden = box.scrollWidth - box.clientWidth; break; }
    }
    const rows = [...table.querySelectorAll('tbody tr')];
    return {
      first: rows[0]?.textContent.trim().split(/\\s/)[0],
      hidden,
      broken: [...table.querySelectorAll('td:first-child code')]
        .filter((code) => code.getClientRects().length > 1).map((code) => code.textContent),
      keywords: table.closest('.keywords') !== null,
      narrowestLastColumn: Math.min(...rows.map((row) =>
        row.lastElementChild.getBoundingClientRect().width / table.getBoundingClientRect().width)),
    };
  });
  document.getElementById('layout').textContent =
    JSON.stringify({width: window.innerWidth, tables});
})();
</script>"""


def test_tables_fit_a_1280px_window(site: Path) -> None:
    """The keyword tables (chat.completions.create has the longest) and the parameter lists
    of classes (the client's) show every column without scrolling, keywords unbroken."""
    pages = []
    for name in ("chat", "clients"):
        page = site / "reference" / name / "measured.html"  # beside index.html: same assets
        built = (page.parent / "index.html").read_text(encoding="utf-8")
        page.write_text(built.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
        pages.append(page)
    chat, clients = measure(pages, 1280, 2000)
    assert chat["width"] == clients["width"] == 1280
    assert next(t["first"] for t in chat["tables"] if t["keywords"]) == "model"  # create's
    assert clients["tables"][0]["first"] == "api_key"  # the Client's parameters
    for tables in (chat["tables"], clients["tables"]):
        assert [(t["first"], t["hidden"]) for t in tables if t["hidden"]] == []
        assert [t["broken"] for t in tables if t["broken"]] == []
        keywords = [t for t in tables if t["keywords"]]
        assert all(t["narrowestLastColumn"] > 0.3 for t in keywords), keywords


def private_type_aliases() -> set[str]:
    """The names of the type aliases (``X: TypeAlias = ...``) the package's private modules
    define: a reader cannot look them up."""
    names = set()
    for path in (SRC / "aigateway").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        if not any(part.startswith("_") and part != "__init__" for part in parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and "TypeAlias" in ast.unparse(node.annotation)
            ):
                names.add(node.target.id)
    return names


def test_annotations_show_what_private_aliases_stand_for(site: Path) -> None:
    aliases = private_type_aliases()
    assert {"URL", "SyncHTTPClient", "TimeoutTypes"} <= aliases
    found = {}
    for page_name, page in reference_pages(site).items():
        code = re.findall(r"<pre\b.*?</pre>|<h[1-6] .*?</h[1-6]>", page, re.DOTALL)
        text = html.unescape(re.sub(r"<[^>]+>", "", "\n".join(code)))  # signatures, headings
        for name in aliases:
            # as an annotation: after ":", "|", "->" or "[", not a dotted name's last part
            if re.search(rf"(?::|\||->|\[)\s*{name}\b(?![.\w])", text):
                found.setdefault(page_name, []).append(name)
    assert found == {}
    clients = html.unescape(re.sub(r"<[^>]+>", "", reference_pages(site)["clients"]))
    assert "base_url: httpx.URL | httpx2.URL" in clients  # a property's type, expanded too
