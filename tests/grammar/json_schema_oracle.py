#!/usr/bin/python3
"""The independent oracle of the JSON schema tests: Debian's python3-jsonschema.

Usage: json_schema_oracle.py IN OUT
IN:  {"cases": [{"schema": S, "instances": ["<hex of the document's bytes>", ...]}, ...]}
OUT: [[verdict, ...], ...] per case and instance: "valid", "invalid: <message>",
     or "nojson: <why>" (not UTF-8, not JSON, or NaN/Infinity, which JSON lacks).

Validation is Draft 2020-12 (the schemas carry no $schema) with format
assertion on. The Debian package checks date, uuid and email itself; it needs
rfc3339-validator (not packaged) for time and date-time, so where that is
missing they are checked here from RFC 3339 directly.
"""
import datetime
import json
import re
import sys

try:
    import jsonschema
    from jsonschema import FormatChecker
except ImportError:
    sys.exit("python3-jsonschema is missing: apt-get install python3-jsonschema")

_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(\.\d+)?([Zz]|[+-](\d\d):(\d\d))")


def rfc3339_time(s):
    m = _TIME.fullmatch(s)
    if not m:
        return False
    if int(m[1]) > 23 or int(m[2]) > 59 or int(m[3]) > 60:
        return False
    return m[6] is None or (int(m[6]) <= 23 and int(m[7]) <= 59)


def rfc3339_date(s):
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", s):
        return False
    try:
        datetime.date(int(s[:4]), int(s[5:7]), int(s[8:10]))
    except ValueError:
        return False
    return True


def make_checker():
    checker = FormatChecker()
    if "date-time" not in checker.checkers:
        checker.checks("time")(lambda s: not isinstance(s, str) or rfc3339_time(s))
        checker.checks("date-time")(
            lambda s: not isinstance(s, str)
            or (len(s) > 11 and s[10] in "Tt" and rfc3339_date(s[:10]) and rfc3339_time(s[11:])))
    return checker


def reject_constant(name):
    raise ValueError("not JSON: " + name)


def verdict(validator, hexdoc):
    try:
        text = bytes.fromhex(hexdoc).decode("utf-8")
        doc = json.loads(text, parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError) as e:
        return "nojson: " + str(e)[:200]
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    return "valid" if error is None else "invalid: " + error.message[:200]


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    checker = make_checker()
    out = []
    for case in spec["cases"]:
        cls = jsonschema.validators.validator_for(case["schema"], default=jsonschema.Draft202012Validator)
        cls.check_schema(case["schema"])
        validator = cls(case["schema"], format_checker=checker)
        out.append([verdict(validator, h) for h in case["instances"]])
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
