"""The HTML view reads the same in light and dark notebook themes.

Every element that paints a background must choose its text colour with it (on itself or on the
nearest element that paints the background behind it), and every text the view shows must
contrast with what is behind it by at least WCAG's 4.5:1, whatever colour the theme lets it
inherit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalMemory, ThreadSnapshot
from langchain_om.display import render_html
from langchain_om.testing import FunctionChatModel

LIGHT = ("#000000", "#ffffff")  # (inherited text, page background)
DARK = ("#dddddd", "#111111")
VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}
LOG = """Date: Nov 2, 2026
* 🔴 (09:00) User is Maya, moving from Berlin to Lisbon in March
  * 🟡 (09:02) budget 1,400 EUR a month, no walk-ups (bad knee)
* 🟢 (09:05) User's cat is called Pixel
* ✅ (09:07) Chose flat ES-04
* (09:08) Maya wants a viewing on Friday"""


@dataclass
class Element:
    tag: str
    style: dict[str, str]
    parent: Element | None
    text: list[str] = field(default_factory=list)

    @property
    def background(self) -> str | None:
        value = self.style.get("background-color") or self.style.get("background")
        return None if value in (None, "transparent", "inherit", "none") else value

    @property
    def colour(self) -> str | None:
        value = self.style.get("color")
        return None if value in (None, "inherit") else value


class Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self.stack: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raw = dict(attrs).get("style") or ""
        style = {
            k.strip().lower(): v.strip().lower()
            for k, _, v in (d.partition(":") for d in raw.split(";"))
            if k.strip()
        }
        element = Element(tag, style, self.stack[-1] if self.stack else None)
        self.elements.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        if tag not in VOID:
            assert self.stack and self.stack[-1].tag == tag, f"unbalanced </{tag}>"
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if data.strip():
            assert self.stack, f"text outside any element: {data!r}"
            self.stack[-1].text.append(data.strip())


def hex_rgb(value: str) -> tuple[float, float, float]:
    match = re.fullmatch(r"#([0-9a-f]{3}|[0-9a-f]{6})", value)
    assert match, f"colours in the view are hex, got {value!r}"
    digits = match.group(1)
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    r, g, b = (int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4))
    return r, g, b


def luminance(value: str) -> float:
    channels = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in hex_rgb(value)]
    return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]


def contrast(a: str, b: str) -> float:
    low, high = sorted((luminance(a), luminance(b)))
    return (high + 0.05) / (low + 0.05)


def effective(element: Element, theme: tuple[str, str]) -> tuple[str, str]:
    """(text colour, background) an element shows under ``theme``."""
    colour = background = None
    node: Element | None = element
    while node is not None and (colour is None or background is None):
        colour = colour or node.colour
        background = background or node.background
        node = node.parent
    return colour or theme[0], background or theme[1]


def chosen_with_background(element: Element) -> bool:
    """Whether a colour is set on ``element`` or between it and the background behind it."""
    node: Element | None = element
    while node is not None:
        if node.colour:
            return True
        if node is not element and node.background:
            return False
        node = node.parent
    return False


def snapshot() -> ThreadSnapshot:
    model = FunctionChatModel(
        function=lambda messages, info: (
            f"<observations>\n{LOG}\n</observations>\n"
            "<current-task>Book a viewing of ES-04</current-task>\n"
            "<suggested-response>Ask which day suits Maya</suggested-response>"
        )
    )
    memory = ObservationalMemory(
        model=model, observation={"message_tokens": 40}, background="manual"
    )
    # the messages say what the log observes (the Observer's lines must be grounded in them)
    turn = [
        HumanMessage(
            "I'm Maya, moving from Berlin to Lisbon in March. My budget is 1,400 EUR a month, "
            "and no walk-ups: I have a bad knee. My cat is called Pixel.",
            id="h1",
        ),
        AIMessage("Flat ES-04 has a lift and takes cats.", id="a1"),
        HumanMessage("Then I chose flat ES-04. I want a viewing on Friday.", id="h2"),
    ]
    memory.observe(thread_id="maya", messages=turn)
    # a window over its threshold: the bar shows the "over" colour too
    return memory.add_messages("maya", [HumanMessage("more " * 80, id="h3")])


def parsed(html: str) -> list[Element]:
    collect = Collect()
    collect.feed(html)
    collect.close()
    assert not collect.stack, "every element is closed"
    return collect.elements


def test_the_snapshot_exercises_every_styled_part() -> None:
    html = render_html(snapshot(), archived=2)
    for part in ("#fdecea", "#fef9e7", "#eafaf1", "#f2f3f4", "current task", "archive: 2"):
        assert part in html
    backgrounds = {e.background for e in parsed(html) if e.background}
    assert len(backgrounds) >= 7, backgrounds  # card, track, fill, over, four priorities


def test_every_background_chooses_its_text_colour() -> None:
    elements = parsed(render_html(snapshot(), archived=2))
    loose = [(e.tag, e.style) for e in elements if e.background and not chosen_with_background(e)]
    assert not loose


@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
def test_text_contrast_is_readable_and_theme_independent(theme: tuple[str, str]) -> None:
    elements = parsed(render_html(snapshot(), archived=2))
    shown = [e for e in elements if e.text or e.background]
    assert any(e.text for e in shown)
    for element in shown:
        colour, background = effective(element, theme)
        assert (colour, background) == effective(element, LIGHT if theme is DARK else DARK), (
            f"{element.tag} {element.text} depends on the theme's inherited colours"
        )
        ratio = contrast(colour, background)
        assert ratio >= 4.5, (
            f"{element.tag} {element.text}: {colour} on {background} is {ratio:.2f}:1"
        )


def test_the_checks_catch_an_unstyled_background() -> None:
    bad = parsed('<div style="background:#fdecea">text</div>')
    assert not chosen_with_background(bad[0])
    assert effective(bad[0], DARK) == ("#dddddd", "#fdecea")
    assert contrast("#dddddd", "#fdecea") < 4.5
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
