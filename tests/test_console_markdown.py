"""The console's Markdown rendering (strata.web.markdown): raw HTML never passes, quoted ranges are marked without
breaking the Markdown around them, an answer's cited points stay apart; and the console view's paging and search
over communities (strata.web.view). The browser test checks the same in Chromium; these run without one."""

from __future__ import annotations

import re

from core.records import Community, Entity, GraphSnapshot, Relation
from strata.web.markdown import answer_markdown, plain_text, render_markdown
from strata.web.view import ConsoleView

DOC = """# Deploy runbook

Roll out with `deployctl apply --canary 10` before the full rollout.

- pause the rollout
- restore the previous release

```bash
deployctl rollback --to previous
deployctl status
```

| key | value |
|-----|-------|
| ttl | 900   |
"""


def test_raw_html_scripts_and_remote_images_never_reach_the_page() -> None:
    hostile = ('<script>alert(1)</script>\n\n<img src="x" onerror="alert(2)">\n\n<div onclick="x()">d</div>\n\n'
               "[a](javascript:alert(3)) [b](vbscript:x) [c](data:text/html,hi) ![t](https://example.com/t.png)")
    html = render_markdown(hostile)
    assert not re.search(r"<(script|img|div|iframe)\b", html)
    assert not re.search(r"<[^>]+\son\w+=", html)  # no event handler on any element
    assert "javascript:" not in re.sub(r">[^<]*<", "><", html)  # only as text, never in an attribute
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text
    assert 'class="md-image"' in html and "<a " not in html


def test_blocks_lists_and_inline_code_render_as_such() -> None:
    html = render_markdown(DOC)
    assert "<code>deployctl apply --canary 10</code>" in html
    assert html.count("<li>") == 2
    assert '<pre><code class="language-bash">deployctl rollback --to previous\ndeployctl status\n</code></pre>' in html
    assert "<table>" in html and "<td>900</td>" in html


def _marked(html: str) -> list[str]:
    return re.findall(r"<mark>(.*?)</mark>", html, re.S)


def test_a_quoted_range_is_marked_inside_whatever_markdown_holds_it() -> None:
    sentence = DOC.index("Roll out")
    html = render_markdown(DOC, [(sentence, DOC.index("rollout.") + len("rollout."))])
    assert _marked(html) == ["Roll out with ", "deployctl apply --canary 10", " before the full rollout."]
    # A range over a list and one over a whole code block (fences included): the list and the block survive.
    lst = (DOC.index("- pause"), DOC.index("release") + len("release"))
    block = (DOC.index("```bash"), DOC.index("status\n```") + len("status\n```"))
    html = render_markdown(DOC, [lst, block])
    assert html.count("<li><mark>") == 2 and "<pre><code class=\"language-bash\"><mark>deployctl rollback" in html
    assert "\ue000" not in html and "\ue001" not in html
    # A table row: the table stays a table.
    row = (DOC.index("| ttl"), DOC.index("900   |") + len("900   |"))
    assert "<td><mark>ttl</mark></td>" in render_markdown(DOC, [row])
    # Out-of-range or empty ranges are ignored; marker characters already in the text are neutralised.
    assert render_markdown(DOC, [(5, 5), (-1, 3), (0, 10_000)]) == render_markdown(DOC)
    assert "<mark>" not in render_markdown("a \ue000b\ue001 c")


def test_an_answer_keeps_each_cited_point_apart_and_its_fences_closed() -> None:
    answer = ("Roll out with `x` first. [a.md#0000]\nA sentence the source\nwrapped. [b.md#0001]\n"
              "```bash\nrollback\n``` [a.md#0000]\n- one [c.md#0]\n- two [c.md#0]")
    md = answer_markdown(answer)
    html = render_markdown(md)
    assert html.count("<p>") >= 3 and "<pre><code" in html and html.count("<li>") == 2
    assert "```" not in html and "[a.md#0000]" in html
    # the line naming a section (answers.answer.quoted_text) stands apart from the sentence under it, and a line
    # of quoted text that happens to open with "§" is no label
    answer = "\u00a7 `SSL_CERT_FILE`\n\nIf this variable is set, x loads it. [e.md#0001]"
    html = render_markdown(answer_markdown(answer))
    assert html.count("<p>") == 2 and html.index("SSL_CERT_FILE") < html.index("If this variable"), html
    assert render_markdown(answer_markdown("Zgodnie z\n\u00a7 4 ust. 2 tak jest. [p.md#0000]")).count("<p>") == 1


def test_a_preview_reads_as_rendered_text() -> None:
    assert plain_text(DOC, 60) == "Deploy runbook Roll out with deployctl apply --canary 10…"  # at a word's end


def _view(n_small: int) -> ConsoleView:
    entities = [Entity(f"e{i}", f"svc-{i:03d}", "service", "", ("c#0",)) for i in range(100 + 4 * n_small)]
    needle = 100 + 4 * 7 + 3  # the fourth member of c0_s7: not in its title (the first three names)
    if n_small > 7:
        entities[needle] = Entity(f"e{needle}", "zz-needle", "service", "", ("c#0",))
    rels = [Relation(f"r{i}", "e0", f"e{i}", "", ("c#0",)) for i in range(1, 100)]
    big = tuple(f"e{i}" for i in range(100))
    comms = [Community("c0_big", 0, None, big), Community("c1_big", 1, "c0_big", big[:50])] + [
        Community(f"c0_s{j}", 0, None, tuple(f"e{100 + 4 * j + k}" for k in range(4))) for j in range(n_small)]

    class Index:
        rows: list = []

    return ConsoleView.build(Index(), comms, [], GraphSnapshot(tuple(entities), tuple(rels)))


def test_communities_are_paged_searchable_and_tell_one_title_at_two_levels_apart() -> None:
    view = _view(120)
    page = view.tree(limit=50)
    assert (page.total, page.matched, len(page.communities)) == (122, 122, 50)
    last = view.tree(offset=120, limit=50).communities  # coarsest level first, then by size
    assert len(last) == 2 and last[-1].id == "c1_big" and page.communities[0].id == "c0_big"
    found = view.tree("NEEDLE")
    assert [c.id for c in found.communities] == ["c0_s7"] and found.communities[0].matched_members == ["zz-needle"]
    assert [c.level for c in view.tree(level=1).communities] == [1]
    assert [c.id for c in view.tree(ids=["c1_big", "nope", "c1_big"]).communities] == ["c1_big"]
    assert view.tree(ids=[]).matched == 0  # an empty list of ids is none, not all
    # The big community and its sub-community share a title: each says so, and the level tells them apart.
    big, sub = view.summary(view.communities["c0_big"]), view.summary(view.communities["c1_big"])
    assert big.title == sub.title and big.same_title == ["c1_big"] and sub.same_title == ["c0_big"]
    assert {c.id for c in view.tree(big.title[:8]).communities} >= {"c0_big", "c1_big"}


def test_a_large_community_pages_its_members_and_draws_its_best_connected() -> None:
    view = _view(0)
    d = view.community("c0_big", members_offset=25, members_limit=25)
    assert d.members_total == 100 and len(d.members) == 25 and d.members_offset == 25
    assert len(d.graph.nodes) == 40 and d.graph.truncated == 60 and d.graph.nodes[0].id == "e0"  # the hub first
    assert d.children[0].id == "c1_big" and view.community("c1_big").parent.id == "c0_big"
