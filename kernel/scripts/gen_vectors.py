#!/usr/bin/env python3
"""Turn vectors/*.json into the C header used by the sched_yield_to KUnit suite.

Usage: gen_vectors.py VECTORS_DIR OUTPUT_HEADER
Stdlib only.  Fails (exit 1) on any schema problem so a malformed vector is
caught at build time rather than silently skipped.
"""
import json
import os
import sys

U64_MAX = (1 << 64) - 1


def fail(msg):
    sys.stderr.write("gen_vectors: %s\n" % msg)
    sys.exit(1)


def u64(case, key):
    v = case.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= U64_MAX:
        fail("case %r: %r must be an integer in [0, 2^64-1]" % (case.get("name"), key))
    return "%dULL" % v


def u32(case, key):
    v = case.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < (1 << 32):
        fail("case %r: %r must be an integer in [0, 2^32-1]" % (case.get("name"), key))
    return "%dU" % v


def pid(case, key):
    v = case.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not -1 <= v < (1 << 31):
        fail("case %r: %r must be a pid (int >= -1)" % (case.get("name"), key))
    return "%d" % v


def boolean(case, key, obj=None):
    v = (obj if obj is not None else case).get(key)
    if not isinstance(v, bool):
        fail("case %r: %r must be true/false" % (case.get("name"), key))
    return "true" if v else "false"


def name(case):
    n = case.get("name")
    if not isinstance(n, str) or not n or '"' in n or "\\" in n:
        fail("every case needs a plain string 'name'")
    return '"%s"' % n


RESULTS = {"applied": "YT_SEQ_APPLIED", "applied_reverse": "YT_SEQ_APPLIED_REVERSE",
           "rate_limited": "YT_SEQ_RATE_LIMITED"}


def seq_row(c):
    steps, expect = c.get("steps"), c.get("expect")
    if not isinstance(steps, list) or not isinstance(expect, list) or len(steps) != len(expect) or not steps:
        fail("case %r: steps and expect must be non-empty lists of equal length" % c.get("name"))
    if len(steps) > 16:
        fail("case %r: at most 16 steps" % c.get("name"))
    st = ", ".join("{ %s, %s, %s }" % (u64(s, "now_ns"), pid(s, "src"), pid(s, "dst")) for s in steps)
    for e in expect:
        if e not in RESULTS:
            fail("case %r: expect entries must be one of %s" % (c.get("name"), sorted(RESULTS)))
    ex = ", ".join(RESULTS[e] for e in expect)
    return "{ %s, %d, { %s }, { %s } }" % (name(c), len(steps), st, ex)


TABLES = [
    # file, C array, row formatter
    ("deboost_penalty.json", "yt_penalty_cases",
     lambda c: "{ %s, %s, %s, %s, %s, %s }" % (name(c), u64(c, "gran"), u64(c, "need"), u32(c, "h_nr_queued"),
                                               boolean(c, "reverse_pair"), u64(c, "expect"))),
    ("deboost_cap.json", "yt_cap_cases",
     lambda c: "{ %s, %s, %s, %s }" % (name(c), u32(c, "h_nr_queued"), u64(c, "gran"), u64(c, "expect"))),
    ("deboost_need.json", "yt_need_cases",
     lambda c: "{ %s, %s, %s, %s }" % (name(c), u64(c, "vruntime_yielder"), u64(c, "vruntime_target"),
                                       u64(c, "expect"))),
    ("deboost_apply.json", "yt_apply_cases",
     lambda c: "{ %s, %s, %s, %s, %s }" % (name(c), u64(c, "vruntime"), u64(c, "penalty"),
                                           boolean(c, "applied", c.get("expect") or {}),
                                           u64(c.get("expect") or {}, "vruntime"))),
    ("deboost_ratelimit.json", "yt_ratelimit_cases",
     lambda c: "{ %s, %s, %s, %s }" % (name(c), u64(c, "last_apply_ns"), u64(c, "now_ns"), boolean(c, "expect"))),
    ("deboost_debounce.json", "yt_debounce_cases",
     lambda c: "{ %s, %s, %s, %s, %s, %s, %s, %s }" % (name(c), pid(c, "last_src"), pid(c, "last_dst"),
                                                       u64(c, "last_pair_ns"), pid(c, "src"), pid(c, "dst"),
                                                       u64(c, "now_ns"), boolean(c, "expect"))),
    ("deboost_ratelimit_sequence.json", "yt_sequence_cases", seq_row),
    ("yield_borrow_budget.json", "yt_borrow_budget_cases",
     lambda c: "{ %s, %s, %s, %s }" % (name(c), u64(c, "slice_ns"), u64(c, "ran_ns"), u64(c, "expect"))),
    ("yield_borrow_allowed.json", "yt_borrow_allowed_cases",
     lambda c: "{ %s, %s, %s, %s, %s, %s }" % (name(c), u64(c, "vruntime"), u64(c, "avg_vruntime"), u64(c, "charge"),
                                               u64(c, "limit"), boolean(c, "expect"))),
]


def wrap(text, width=90):
    """Break a row initializer after commas so no line exceeds the kernel's 100 columns."""
    out, cur = [], "\t"
    for tok in text.replace("{ ", "{\0").split(" "):
        tok = tok.replace("\0", " ")
        cand = tok if cur.strip() == "" else cur + " " + tok
        if cur.strip() and len(cand.expandtabs(8)) > width:
            out.append(cur.rstrip())
            cur = "\t  " + tok
        else:
            cur = cand if cur.strip() else "\t" + tok
    out.append(cur.rstrip())
    return out


def main():
    if len(sys.argv) != 3:
        fail("usage: gen_vectors.py VECTORS_DIR OUTPUT_HEADER")
    vdir, out = sys.argv[1], sys.argv[2]
    lines = [
        "/* SPDX-License-Identifier: GPL-2.0 */",
        "/*",
        " * Test vectors for the yield_to() decision helpers (kernel/sched/yield_to.h).",
        " * Generated from the JSON files in the oversub vectors directory; do not edit.",
        " */",
        "",
    ]
    for fname, arr, row in TABLES:
        path = os.path.join(vdir, fname)
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            fail("%s: %s" % (path, e))
        cases = doc.get("cases") if isinstance(doc, dict) else None
        if not isinstance(cases, list) or not cases:
            fail("%s: needs a non-empty 'cases' list" % path)
        if not isinstance(doc.get("description"), str) or not isinstance(doc.get("units"), str):
            fail("%s: needs 'description' and 'units' strings" % path)
        names = [c.get("name") for c in cases]
        if len(set(names)) != len(names):
            fail("%s: duplicate case names" % path)
        lines.append("/* %s: %d cases */" % (fname, len(cases)))
        lines.append("static const struct %s %s[] = {" % (arr[:-1], arr))
        for c in cases:
            lines.extend(wrap(row(c) + ","))
        lines.append("};")
        lines.append("")
    text = "\n".join(lines)
    try:
        with open(out) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
