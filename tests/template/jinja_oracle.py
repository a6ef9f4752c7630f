#!/usr/bin/python3
"""Renders Jinja test cases with Python's jinja2 set up as Hugging Face
transformers sets it up for chat templates, as the oracle of offgraph's own
engine (tests/template/oracle_test.cpp runs it through /usr/bin/python3).

Usage: jinja_oracle.py CASES.json RESULTS.json
CASES.json: {"now": <unix seconds>, "cases": [{"template": str, "vars": {...}}, ...]}
RESULTS.json: [{"ok": true, "out": str} | {"ok": false, "kind": str, "error": str[, "line": N]}, ...]
(line: where a syntax error is)
"""
import datetime
import json
import sys

import jinja2
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTracker(Extension):
    """{% generation %}...{% endgeneration %} renders its body (as transformers' AssistantTracker)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.fromtimestamp(now, tz=datetime.timezone.utc).strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    env = make_env(spec["now"])
    results = []
    compiled = {}  # one compile per distinct template: compiling dominates the run time
    for case in spec["cases"]:
        try:
            source = case["template"]
            if source not in compiled:
                try:
                    compiled[source] = env.from_string(source)
                except Exception as e:  # a syntax error is every render's result
                    compiled[source] = e
            template = compiled[source]
            if isinstance(template, Exception):
                raise template
            out = template.render(**case["vars"])
            results.append({"ok": True, "out": out})
        except Exception as e:  # every failure is a result the engine must reproduce
            kind = "raise_exception" if type(e) is TemplateError else type(e).__name__
            result = {"ok": False, "kind": kind, "error": str(e)}
            if isinstance(e, jinja2.TemplateSyntaxError):
                result["line"] = e.lineno
            results.append(result)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=True)


if __name__ == "__main__":
    main()
