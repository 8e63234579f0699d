"""Messages in the HTML export: Markdown rendered, raw HTML escaped, unsafe links not made."""

from __future__ import annotations

from comal.cli.export_render import render_markdown


def test_markdown_is_rendered_and_raw_html_and_unsafe_links_are_not() -> None:
    text = (
        "**Fixed** the <script>x()</script> bug; see [docs](javascript:alert(1)) and"
        " [site](https://example.com).\n\n| a |\n|---|\n| 1 |\n\n<div onclick=go()>block</div>"
    )
    assert render_markdown(text) == (
        "<p><strong>Fixed</strong> the &lt;script&gt;x()&lt;/script&gt; bug; see"
        ' [docs](javascript:alert(1)) and <a href="https://example.com">site</a>.</p>\n'
        "<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n"
        "</tr>\n</tbody>\n</table>\n<p>&lt;div onclick=go()&gt;block&lt;/div&gt;</p>\n"
    )
