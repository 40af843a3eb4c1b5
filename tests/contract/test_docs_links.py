"""Every file the README and docs/ point at is in the repository (a pointer to a file outside
it, such as ../shared/..., reads as a broken link to everyone who clones it)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "charts" / "reprieve" / "README.md"]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")  # [text](path#anchor)
QUOTED = re.compile(r"`((?:\.\./|\./)[^`\s]+\.(?:md|ya?ml|py|json))`")  # `../some/file.md`


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_pointer_is_in_the_repository(page):
    text = page.read_text()
    targets = [t for t in LINK.findall(text) if not t.startswith(("http://", "https://", "mailto:"))]
    targets += QUOTED.findall(text)
    missing = []
    for target in targets:
        resolved = (page.parent / target).resolve()
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)} points at files not in the repository: {missing}"
