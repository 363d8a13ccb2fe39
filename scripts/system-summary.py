#!/usr/bin/env python3
"""scripts/system-summary.py KIND FILE [LABEL] - one compact block of a kforge JSON report
for scripts/gpu-steps.sh's `system` step. KIND: check (kforge check / bench), syscheck
(kforge system check), sysbench (kforge system bench). Lines are cut at 300 characters."""
import json
import sys


def cut(s, n=300):
    s = str(s).replace("\n", " ")
    return s if len(s) <= n else s[: n - 3] + "..."


def reasons(d):
    return "; ".join("%s%s: %s" % (r.get("code", ""), " [" + r["slot"] + "]" if r.get("slot") else "",
                                   cut(r.get("message", ""), 200)) for r in d.get("reasons") or [])


def main():
    kind, path = sys.argv[1], sys.argv[2]
    label = sys.argv[3] if len(sys.argv) > 3 else path
    try:
        d = json.load(open(path))
    except (OSError, ValueError) as e:
        print(cut("%s: no report (%s)" % (label, e)))
        return
    if "error" in d and "verdict" not in d or d.get("verdict") == "error":
        print(cut("%s: error: %s" % (label, d.get("error"))))
        return
    if kind == "check":
        c = d.get("check", d)
        sh = " ".join("%s:%s:%.3g" % ("x".join(str(v) for v in s.get("sizes", {}).values()), s.get("kind", "")[:1],
                                      s.get("max_abs_err", -1)) for s in c.get("shapes", []))
        print(cut("%s: %s %.1fs %s" % (label, d.get("verdict"), d.get("seconds") or 0, reasons(d))))
        print(cut("    max_abs_err per shape: " + sh))
        return
    print(cut("%s: %s %.1fs steps_passed=%s %s" % (label, d.get("verdict"), d.get("seconds") or 0,
                                                   d.get("steps_passed"), reasons(d))))
    for s in d.get("slots", []):
        if not s.get("candidate"):
            continue
        tc, cap, en = s.get("task_check") or {}, s.get("captured") or {}, s.get("engagement") or {}
        print(cut("    %-12s task_check=%s %.1fs captured=%s x%s max_abs=%.3g engaged=%s %s/%s" % (
            s["name"], tc.get("verdict"), tc.get("seconds") or 0, cap.get("verdict"), cap.get("calls"),
            cap.get("max_abs") or 0, en.get("engaged"), en.get("calls"), en.get("expected"))))
    for e in d.get("end_to_end", []):
        print(cut("    e2e %s max_abs=%.3g max_rel=%.3g (rtol %g atol %g)" % (
            e["output"], e["max_abs"], e["max_rel"], e["rtol"], e["atol"])))
    if kind != "sysbench":
        return
    sn = d.get("step_ns") or {}
    print(cut("    step %.1f us vs %.1f us gain=%s ci95=%s keep=%s outcome=%s rounds=%s" % (
        (sn.get("candidate") or 0) / 1e3, (sn.get("baseline") or 0) / 1e3, d.get("gain"), d.get("gain_ci95"),
        d.get("keep"), d.get("outcome"), d.get("rounds"))))
    ro = d.get("roofline") or {}
    print(cut("    roofline fraction=%s GB/s=%s bytes=%s" % (ro.get("roofline_fraction"), ro.get("gbytes_per_s"),
                                                             ro.get("bytes"))))
    for s in d.get("stages", []):
        print(cut("    %-10s %-9s %8.1f us (%4.1f%%) vs %8.1f us (%4.1f%%) roof=%s" % (
            s["stage"], s.get("implementation"), (s.get("candidate_ns") or 0) / 1e3,
            100 * (s.get("candidate_share") or 0), (s.get("baseline_ns") or 0) / 1e3,
            100 * (s.get("baseline_share") or 0), s.get("candidate_roofline_fraction"))))
    for l in d.get("local", []):
        print(cut("    local %s %s speedup=%s win=%s %s" % (l.get("slot"), l.get("verdict"), l.get("speedup"),
                                                       l.get("win"), " ".join(
            "%s:%s" % ("x".join(str(v) for v in s.get("sizes", {}).values()), s.get("speedup"))
            for s in l.get("shapes", [])))))


main()
