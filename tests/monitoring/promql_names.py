"""The metric names a PromQL expression reads: strings, label matchers, ranges, grouping
clauses, offsets and Grafana variables are stripped; what is left and not called as a function
or spelled as a keyword is a metric name. Also walks the Grafana dashboard and the rule files."""
import json
import re

import yaml

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan"}
# Grafana's label_values(query, label): the query is PromQL, the label is not a metric.
LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$", re.S)


def metric_names(expr):
    m = LABEL_VALUES.match(expr)
    if m:
        expr = m.group(1)
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"'(?:[^'\\]|\\.)*'", "''", e)
    e = re.sub(r"`[^`]*`", "``", e)
    e = re.sub(r"\$\{[^}]*\}|\$\w+", " ", e)  # Grafana variables ($__rate_interval, ${job})
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\boffset\s+-?\w+", " ", e)
    names = set()
    for tok in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = tok.group(0)
        before = e[tok.start() - 1] if tok.start() > 0 else " "
        if before.isdigit() or before == ".":  # the exponent of 1e18
            continue
        if e[tok.end():].lstrip().startswith("("):  # a function or aggregation
            continue
        if word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


def dashboard_exprs(path):
    """Every PromQL text of a dashboard: panel targets (rows' nested panels too) and the
    templating queries."""
    with open(path) as f:
        dash = json.load(f)
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((p.get("title", ""), t["expr"]))
            walk(p.get("panels", []))

    walk(dash.get("panels", []))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            if q:
                out.append(("$" + v["name"], q))
    return out


def rule_exprs(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    return [(r.get("alert") or r.get("record"), r["expr"])
            for g in doc["groups"] for r in g["rules"]]


def exported_names(metrics_text):
    """Names of the samples in a Prometheus text exposition (histograms as _bucket/_sum/_count,
    as PromQL sees them); families without a sample are not exported."""
    names = set()
    for line in metrics_text.splitlines():
        if line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names
