#!/usr/bin/env python3
"""A kernel calibration carried to another GPU by its spec sheet (docs/fp8.md, "Another GPU from its
spec sheet"): the same parameters, which are fractions of the system's peaks, with the other GPU's
SM count for the wave quantization of GEMM tiles and attention CTAs. Writes systems/calibrations/
blackwell_kernels_from_h100.yaml from systems/calibrations/h100_kernels.yaml:

    /usr/bin/python3 scripts/carry_calibration.py systems/calibrations/h100_kernels.yaml --sm-count 148 \\
        --gpu Blackwell --systems "B200-calibrated and GB200-calibrated" \\
        -o systems/calibrations/blackwell_kernels_from_h100.yaml

usage: carry_calibration.py SRC --sm-count N --gpu NAME --systems TEXT -o OUT
"""
import argparse
import os


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("--sm-count", type=int, required=True)
    ap.add_argument("--gpu", required=True, help="the GPU carried to, for the header")
    ap.add_argument("--systems", required=True, help="the system files that use the result, for its source")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    with open(a.src) as f:
        lines = [line.rstrip("\n") for line in f if not line.startswith("#")]
    src = os.path.relpath(a.src)
    header = [
        f"# perfsweep kernel calibration for {a.gpu}: the H100 calibration's parameters (validate",
        f"# fit-kernels on H100 measurements) with {a.gpu}'s {a.sm_count} SMs for the wave quantization;",
        "# model/kernel_calibration.hpp and docs/validation.md define each parameter. Times in seconds;",
        "# efficiencies are fractions of the system's tensor-core peak, bandwidth fractions of its",
        f"# hbm_bandwidth. Nothing here was measured on {a.gpu} (docs/fp8.md, \"Another GPU from its spec",
        "# sheet\"; made by scripts/carry_calibration.py).",
    ]
    out = []
    seen = set()
    for line in lines:
        key = line.split(":", 1)[0]
        if key == "source":
            line = (f"source: {src} (fitted on H100 layer and in-stream kernel measurements) with {a.sm_count} SMs; "
                    f"efficiencies are fractions of the system peaks, so they carry over to {a.systems}")
        elif key == "sm_count":
            line = f"sm_count: {a.sm_count}"
        seen.add(key)
        out.append(line)
    if not {"source", "sm_count"} <= seen:
        raise SystemExit(f"{a.src}: not a kernel calibration (no source or sm_count)")
    with open(a.out, "w") as f:
        f.write("\n".join(header + out) + "\n")


if __name__ == "__main__":
    main()
