"""Templates are bounded: every attack of issue 11 ends in a clear TemplateLimitError, quickly and
without allocating its payload; compiling never evaluates; heavy templates render off the event
loop; legit templates render as before."""

from __future__ import annotations

import asyncio
import re
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from plait.expr import (
    TemplateError,
    TemplateLimitError,
    TemplateLimits,
    arender,
    compile_template,
    needs_thread,
    render,
    run_in_render_thread,
    set_limits,
)
from plait.expr.budget import Budget
from plait.expr.template import MAX_JINJA_NODES, MAX_JINJA_SOURCE, MAX_JINJA_TAGS

NESTED_LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
SCOPE: dict[str, Any] = {
    "a": {"list": [1, 2, 3], "text": "hello", "n": 7, "big": "y" * 200_000},
    "names": ["ann", "bob"],
    "vars": {"counter": 2},
    "rows": [["x" * 100] * 100] * 200,  # an input: 200 rows of 10,001 characters, written out
}


def lookup(root: str) -> Any:
    return SCOPE[root]


@pytest.fixture(autouse=True)
def short_limits() -> Iterator[None]:
    previous = set_limits(timeout_s=0.5, inline_timeout_s=0.05)
    yield
    set_limits(previous)


# --- every attack: a clear error, quickly, without the allocation -------------------------------------

ATTACKS = [
    pytest.param(NESTED_LOOPS, "longer than", id="nested-loops"),
    pytest.param(
        "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}",
        "output|longer than",
        id="nested-loops-output",
    ),  # fmt: skip
    pytest.param(
        "{% for i in range(100000) %}{% for j in range(100000) %}" + "x" * 50 + "{% endfor %}{% endfor %}",
        "output|longer than",
        id="literal-text-in-loops",
    ),  # fmt: skip
    pytest.param("{{ 'x'.ljust(400000000) }}", "ljust", id="ljust"),
    pytest.param("{{ 'x'.rjust(400000000) }}", "rjust", id="rjust"),
    pytest.param("{{ 'x'.center(400000000) }}", "center", id="center-method"),
    pytest.param("{{ 'x'.zfill(400000000) }}", "zfill", id="zfill"),
    pytest.param("{{ 'a\tb'.expandtabs(400000000) }}", "tabs", id="expandtabs"),
    pytest.param("{{ '{:400000000}'.format(1) }}", "formatted", id="format-width"),
    pytest.param("{{ '{:{w}}'.format(1, w=400000000) }}", "formatted", id="format-nested-width"),
    pytest.param("{{ '{:.400000000f}'.format(1.5) }}", "formatted", id="format-precision"),
    pytest.param(
        "{{ '{0:400000000}'.format_map({'0': 1}) if false else '{x:400000000}'.format_map({'x': 1}) }}",
        "formatted",
        id="format-map",
    ),  # fmt: skip
    pytest.param("{{ '%400000000s' % 1 }}", "formatted", id="percent-width"),
    pytest.param("{{ '%*s' % (400000000, 1) }}", "formatted", id="percent-star"),
    pytest.param("{{ '%.400000000f' % 1.5 }}", "formatted", id="percent-precision"),
    pytest.param("{{ '%400000000s' | format(1) }}", "formatted", id="format-filter"),
    pytest.param("{{ 'x' | center(400000000) }}", "centered", id="center-filter"),
    pytest.param("{{ 'x' | indent(400000000) }}", "indented", id="indent-filter"),
    pytest.param("{{ 'x\ny\nz' | indent('y' * 1000000) }}", "indented", id="indent-string"),
    pytest.param("{{ ('a ' * 1000) | wordwrap(1, wrapstring='x' * 100000) }}", "wrapped", id="wordwrap"),
    pytest.param("{{ 'x' * 10**9 }}", "repeated", id="str-repeat"),
    pytest.param("{{ [1] * 10**9 }}", "repeated", id="list-repeat"),
    pytest.param("{{ 10**9 * (1,) }}", "repeated", id="tuple-repeat-left"),
    pytest.param("{{ range(10**9) | list }}", "Range too big", id="huge-range"),
    pytest.param("{% macro m(n) %}{{ m(n) }}{% endmacro %}{{ m(1) }}", "recursion", id="macro-recursion"),
    pytest.param(
        "{% macro m(n) %}{{ m(n + 1) }}{{ m(n + 1) }}{% endmacro %}{{ m(1) }}", "recursion", id="macro-fanout"
    ),  # fmt: skip
    pytest.param(
        "{% for x in range(10) recursive %}{{ loop(range(100000)) }}{% endfor %}",
        "recursion",
        id="recursive-loop",
    ),  # fmt: skip
    pytest.param(
        "{% set ns = namespace(x='x') %}{% for i in range(64) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}",
        "string",
        id="concat-doubling",
    ),  # fmt: skip
    pytest.param(
        "{% set ns = namespace(x=[1]) %}{% for i in range(64) %}{% set ns.x = [ns.x, ns.x] %}"
        "{% endfor %}{{ ns.x }}",
        "value",
        id="shared-list-doubling",
    ),  # fmt: skip
    pytest.param(
        "{% set ns = namespace(x=[1]) %}{% for i in range(64) %}{% set ns.x = ns.x + ns.x %}{% endfor %}",
        "value",
        id="list-plus-doubling",
    ),  # fmt: skip
    pytest.param(
        "{% set a = ['x' * 1000] * 1000 %}{% set b = [a] * 1000 %}{{ b | string }}",
        "repeated",
        id="shared-nesting",
    ),  # fmt: skip
    pytest.param(
        "{% set b = a %}{% set c = b ~ b %}{% set d = c ~ c %}{% set e = d ~ d %}{% set f = e ~ e %}"
        "{% set g = f ~ f %}{% set h = g ~ g %}{{ h }}",
        "string",
        id="set-doubling",
    ),  # fmt: skip
    pytest.param("{{ ('y' * 100000).join(['a'] * 100000) }}", "joined", id="join-method"),
    pytest.param("{{ ('x' * 100000) | join('y' * 100000) }}", "joined", id="join-filter"),
    pytest.param("{{ ('x' * 1000) | replace('', 'y' * 10000) }}", "replaced", id="replace-filter"),
    pytest.param("{{ ('x' * 100000).replace('x', 'y' * 1000) }}", "replaced", id="replace-method"),
    pytest.param("{{ ('a' * 100000).translate({97: 'b' * 1000}) }}", "translated", id="translate"),
    pytest.param("{{ rows | sum(start=[]) }}", "summed", id="sum-lists"),
    pytest.param("{{ [1] | batch(1000000000, 'x') | list }}", "batch", id="batch"),
    pytest.param("{{ range(10) | slice(1000000000, 'x') | list }}", "slices", id="slice"),
    pytest.param("{{ lipsum(n=100000000) }}", "placeholder", id="lipsum"),
    pytest.param("{{ (1).to_bytes(400000000, 'big') }}", "byte string", id="to-bytes"),
    pytest.param("{{ {}.fromkeys(range(100000), 'x' * 1000) }}", "value", id="fromkeys"),
    pytest.param("{{ 'x' | tojson(indent=100000000) }}", "indent", id="tojson-indent"),
    pytest.param(
        "{% set ns = namespace(v=2 ** 10000) %}{% for i in range(40) %}{% set ns.v = ns.v * ns.v %}"
        "{% endfor %}",
        "number",
        id="int-squaring",
    ),  # fmt: skip
    pytest.param("{{ (2 ** 10000) ** 10000 }}", "number", id="int-power"),
    pytest.param("{{ 10 ** 100000 }}", "exponent", id="huge-exponent"),
    pytest.param("{{ a.big ~ a.big ~ a.big ~ a.big ~ a.big ~ a.big }}", "string", id="concat-inputs"),
]


@pytest.mark.parametrize(("text", "says"), ATTACKS)
def test_attack_is_contained(text: str, says: str) -> None:
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(TemplateError) as info:
            render(text, lookup)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert re.search(says, info.value.message, re.IGNORECASE), info.value.message
    assert time.monotonic() - started < 5
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.1f} MiB"


def test_limit_errors_name_the_limit_and_the_fix() -> None:
    with pytest.raises(TemplateLimitError) as info:
        render("{{ 'x'.ljust(400000000) }}", lookup)
    assert "1,048,576 characters" in info.value.message
    assert "PLAIT_TEMPLATE_MAX_CHARS" in (info.value.hint or "")
    with pytest.raises(TemplateLimitError) as info:
        render(NESTED_LOOPS, lookup)
    assert "longer than 0.5s" in info.value.message
    assert "PLAIT_TEMPLATE_TIMEOUT_S" in (info.value.hint or "")


def test_time_budget_is_kept() -> None:
    started = time.monotonic()
    with pytest.raises(TemplateLimitError):
        render(NESTED_LOOPS, lookup)
    assert 0.45 < time.monotonic() - started < 1.5


def test_caller_timeout_caps_the_budget_just_below_it() -> None:
    started = time.monotonic()
    with pytest.raises(TemplateLimitError, match="longer than 0.18s") as info:
        render(NESTED_LOOPS, lookup, timeout_s=0.2)
    assert time.monotonic() - started < 0.2
    assert "timeout_s" in (info.value.hint or "")


def test_size_limit_is_configurable() -> None:
    set_limits(max_chars=100)
    with pytest.raises(TemplateLimitError, match="larger than 100 characters"):
        render("{{ 'x' * 101 }}", lookup)
    assert render("{{ 'x' * 100 }}", lookup) == "x" * 100


def test_plain_text_substitution_is_bounded_too() -> None:
    set_limits(max_chars=1000)
    with pytest.raises(TemplateLimitError, match="a text larger than 1,000"):
        render("{{a.text}}" * 201, lookup)
    assert render("{{a.big}}", lookup) == SCOPE["a"]["big"]  # a whole value is not text: passed as is


def test_limits_from_env() -> None:
    env = {
        "PLAIT_TEMPLATE_TIMEOUT_S": "3.5",
        "PLAIT_TEMPLATE_MAX_CHARS": "2048",
        "PLAIT_TEMPLATE_INLINE_TIMEOUT_S": "0.2",
        "PLAIT_TEMPLATE_WORKERS": "3",
    }
    assert TemplateLimits.from_env(env) == TemplateLimits(3.5, 2048, 0.2, 3)
    assert TemplateLimits.from_env(
        {"PLAIT_TEMPLATE_TIMEOUT_S": "soon", "PLAIT_TEMPLATE_MAX_CHARS": "-1"}
    ) == (TemplateLimits())


# --- compiling never evaluates -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "{{ 'x' | center(400000000) }}",
        "{{ '%400000000s' % 1 }}",
        "{{ 'x' * 400000000 }}",
        "{{ ('x' | center(400000000)) | length }}",
        "{% if ('x' | center(400000000)) %}{% endif %}",
        "{% autoescape ('x' | center(400000000)) | length > 0 %}{% endautoescape %}",
        "{{ [1] * 10**9 is sameas 1 }}",
        "{{ 'x' ~ ('y' * 10**9) }}",
        "{% set x = 'x' | center(400000000) %}",
        "{{ 'a' ~ 'x' | indent(400000000) }}",
    ],
)
def test_compiling_never_evaluates(text: str) -> None:
    compile_template.cache_clear()
    tracemalloc.start()
    started = time.monotonic()
    try:
        compile_template(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 2
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{{ a | upper }}" + "x" * MAX_JINJA_SOURCE, "characters long"),
        ("{{ a | upper }}" * (MAX_JINJA_TAGS + 1), "tags"),
        (
            "{% if a %}" + "{{ a.b.c.d.e.f.g.h.i.j.k.l }}" * (MAX_JINJA_NODES // 8) + "{% endif %}",
            "expressions",
        ),
        ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nested too deeply"),
        ("{% if a %}" * 2000 + "{% endif %}" * 2000, "tags"),
    ],
)
def test_oversized_templates_are_refused_before_compiling(text: str, says: str) -> None:
    started = time.monotonic()
    with pytest.raises(TemplateError, match=says):
        compile_template(text)
    assert time.monotonic() - started < 3


# --- legit templates still render identically ------------------------------------------------------

LEGIT = [
    ("{% for n in names %}<{{ n }}>{% endfor %}", "<ann><bob>"),
    (
        "{% for n in names %}{{ loop.index }}/{{ loop.length }}{% if not loop.last %},{% endif %}{% endfor %}",
        "1/2,2/2",
    ),  # fmt: skip
    ("{% for x in a.list if x > 1 %}{{ x }}{% else %}none{% endfor %}", "23"),
    ("{% for x in [] %}{{ x }}{% else %}none{% endfor %}", "none"),
    ("{% macro greet(who) %}hi {{ who }}{% endmacro %}{{ greet('ann') }}", "hi ann"),
    ("{% set t %}{{ a.n }} items{% endset %}[{{ t }}]", "[7 items]"),
    ("{% filter upper %}{{ a.text }}{% endfilter %}", "HELLO"),
    ("{{ '%05.1f|%-4s|%d' % (3.14159, 'ab', 7) }}", "003.1|ab  |7"),
    ("{{ '{:>6}|{:^5}|{:08.3f}'.format('ab', 'c', 3.14159) }}", "    ab|  c  |0003.142"),
    ("{{ '{x}-{y}'.format_map({'x': 1, 'y': 2}) }}", "1-2"),
    ("{{ a.text.ljust(8, '.') }}{{ a.text.center(9, '*') }}", "hello...**hello**"),
    (
        "{{ names | join(', ') }} {{ a.list | sum }} {{ ([[1], [2, 3]]) | sum(start=[]) }}",
        "ann, bob 6 [1, 2, 3]",
    ),
    ("{{ a.list | map('string') | join('-') }}", "1-2-3"),
    ("{{ [a.list, a.list] }} {{ {'k': a.n} }} {{ (1, a.n) }}", '[[1, 2, 3], [1, 2, 3]] {"k": 7} [1, 7]'),
    ("{{ a.text ~ '!' ~ a.n }}", "hello!7"),
    (
        "{{ 'ab' * 3 }} {{ [0] * 3 }} {{ 2 ** 10 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 1 + 2 }}",
        "ababab [0, 0, 0] 1024 3 1 3",
    ),
    ("{{ a.list + [4] }}", "[1, 2, 3, 4]"),
    ("{{ 'a\nb' | indent(2, first=true) }}", "  a\n  b"),
    ("{{ 'x' | center(5) }}|{{ ('a b c d') | wordwrap(3) }}", "  x  |a b\nc d"),
    ("{{ a.list | batch(2) | list }} {{ a.list | slice(2) | list }}", "[[1, 2], [3]] [[1, 2], [3]]"),
    ("{{ {'b': 1, 'a': 2} | dictsort }}", '[["a", 2], ["b", 1]]'),
    ("{{ a.list | tojson(indent=2) }}", "[\n  1,\n  2,\n  3\n]"),
    ("{{ range(3) | list }} {{ lipsum(1, false, 3, 4).split() | length }}", "[0, 1, 2] 3"),
    (
        "{% set ns = namespace(total=0) %}{% for x in a.list %}{% set ns.total = ns.total + x %}{% endfor %}"
        "{{ ns.total }}",
        "6",
    ),  # fmt: skip
    ("{% for row in [[1, 2], [3]] %}{% for x in row %}{{ x }}{% endfor %};{% endfor %}", "12;3;"),
    ("{{ vars.counter * 2 }}{{ missing | default('-') }}", "4-"),
    ("{% raw %}{{ not rendered }}{% endraw %}", "{{ not rendered }}"),
]


@pytest.mark.parametrize(("text", "expected"), LEGIT)
def test_legit_templates_render_as_before(text: str, expected: str) -> None:
    assert render(text, lookup) == expected
    assert asyncio.run(arender(text, lookup)) == expected


def test_light_templates_stay_inline_and_heavy_ones_are_recognised() -> None:
    light = [
        "{{ a.text }}",
        "{{ a.text | upper }} {{ a.n + 1 }}",
        "{% if a.n %}{{ a.list | join(',') }}{% endif %}",
    ]
    heavy = [
        "{% for x in a.list %}{{ x }}{% endfor %}",
        "{{ a.text.upper() }}",
        "{% macro m() %}{% endmacro %}",
        "{{ a.list | map('string') | list }}",
        "{% if a %}" + "{{ a }}" * 120 + "{% endif %}",
    ]
    assert all(compile_template(t).light for t in light)
    assert not any(compile_template(t).light for t in heavy)
    assert not needs_thread({"x": [light[0], "plain"], "y": 3})
    assert needs_thread({"x": ["plain", {"z": heavy[0]}]})


# --- off the event loop ---------------------------------------------------------------------------------


async def _max_loop_lag(until: asyncio.Future[Any]) -> float:
    worst = 0.0
    while not until.done():
        started = time.monotonic()
        await asyncio.sleep(0.005)
        worst = max(worst, time.monotonic() - started - 0.005)
    return worst


async def test_arender_keeps_the_event_loop_free() -> None:
    task = asyncio.ensure_future(arender({"t": NESTED_LOOPS}, lookup))
    lag = await _max_loop_lag(task)
    with pytest.raises(TemplateLimitError, match="longer than 0.5s"):
        await task
    assert lag < 0.1, f"the event loop stalled {lag * 1000:.0f} ms"


async def test_arender_renders_heavy_templates_on_a_render_thread() -> None:
    looked_up: list[str] = []
    iterated: list[str] = []

    class Spy:
        def __iter__(self) -> Iterator[str]:
            iterated.append(threading.current_thread().name)
            yield from ("ann", "bob")

    def spy_lookup(root: str) -> Any:
        looked_up.append(threading.current_thread().name)
        return Spy() if root == "names" else SCOPE[root]

    here = threading.current_thread().name
    assert await arender("{% for x in names %}{{ x }}{% endfor %}", spy_lookup) == "annbob"
    assert iterated[0].startswith("plait-template")
    assert looked_up == [here]  # variables are resolved on the caller's thread, before the render


async def test_cancelling_arender_stops_the_render_thread() -> None:
    set_limits(timeout_s=30)
    task = asyncio.ensure_future(arender(NESTED_LOOPS, lookup))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The render thread is free again quickly: a new render gets it at once.
    started = time.monotonic()
    assert await arender("{% for x in names %}{{ x }}{% endfor %}", lookup) == "annbob"
    assert time.monotonic() - started < 1


async def test_sync_render_on_the_event_loop_gets_the_short_inline_budget() -> None:
    started = time.monotonic()
    with pytest.raises(TemplateLimitError, match="longer than 0.05s") as info:
        render(NESTED_LOOPS, lookup)
    assert time.monotonic() - started < 0.3
    assert "PLAIT_TEMPLATE_INLINE_TIMEOUT_S" in (info.value.hint or "")


async def test_run_in_render_thread_gives_sync_code_the_full_budget() -> None:
    def job() -> Any:
        started = time.monotonic()
        try:
            render(NESTED_LOOPS, lookup)
        except TemplateLimitError as exc:
            return exc.message, time.monotonic() - started
        return None

    message, took = await run_in_render_thread(job)
    assert "longer than 0.5s" in message
    assert took >= 0.45


def test_budget_weight_counts_shared_values_each_time() -> None:
    budget = Budget(None, 10_000)
    leaf = ["x" * 100]
    assert budget.weight(leaf) == 101
    assert budget.weight([leaf, leaf, leaf]) == 1 + 3 * 101
    assert budget.weight({"k": leaf}) == 1 + 1 + 101
    assert budget.weight([[leaf] * 100] * 100) > 10_000  # stops early: only "too large"
