"""The documentation holds together: every relative link in the README, CONTRIBUTING, CHANGELOG and
docs/*.md points at a file that exists (and at a heading that exists, where it names one), and the
README stays a five-minute read. Links between <!-- forthcoming --> and <!-- /forthcoming --> name
pages other branches are writing, and are not checked."""

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2]
DOCUMENTS = [
    PACKAGE / "README.md",
    PACKAGE / "CONTRIBUTING.md",
    PACKAGE / "CHANGELOG.md",
    *sorted((PACKAGE / "docs").glob("*.md")),
]
README_MAX_LINES = 200

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
FORTHCOMING = re.compile(r"<!-- forthcoming.*?<!-- /forthcoming -->", re.DOTALL)


def checked_text(document: Path) -> str:
    """The document without its code blocks and its forthcoming list."""
    return FORTHCOMING.sub("", FENCED.sub("", document.read_text()))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(document: Path) -> set[str]:
    text = FENCED.sub("", document.read_text())
    return {slug(match) for match in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


def relative_links(document: Path) -> list[str]:
    return [target for target in LINK.findall(checked_text(document)) if not re.match(r"[a-z]+:", target)]


def test_every_relative_link_resolves():
    broken = []
    for document in DOCUMENTS:
        for target in relative_links(document):
            path, _, anchor = target.partition("#")
            linked = (document.parent / path).resolve() if path else document
            if not linked.exists():
                broken.append(f"{document.relative_to(PACKAGE)}: {target} (no such file)")
            elif anchor and linked.is_file() and anchor not in anchors(linked):
                broken.append(f"{document.relative_to(PACKAGE)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_page_of_docs_is_in_its_index():
    index = relative_links(PACKAGE / "docs" / "README.md")
    pages = {page.name for page in (PACKAGE / "docs").glob("*.md")} - {"README.md"}
    assert pages <= set(index), pages - set(index)


def test_the_readme_is_a_five_minute_read():
    assert len((PACKAGE / "README.md").read_text().splitlines()) <= README_MAX_LINES


def test_the_link_check_sees_a_broken_link_and_skips_the_forthcoming(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n[a](gone.md) [b](#title) [c](https://example.com)\n```\n[d](code.md)\n```\n"
        "<!-- forthcoming -->\n[e](later.md)\n<!-- /forthcoming -->\n"
    )
    assert relative_links(page) == ["gone.md", "#title"]
    assert anchors(page) == {"title"}
    assert slug("Re-checks with `scripts/bench`") == "re-checks-with-scriptsbench"
