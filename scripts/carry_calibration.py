#!/usr/bin/env python3
"""A kernel calibration carried to another GPU by its spec sheet (docs/fp8.md, "Another GPU from its
spec sheet"): the same parameters, which are fractions of the system's peaks, with the other GPU's
SM count for the wave quantization of GEMM tiles and attention CTAs. Writes systems/calibrations/
b200_kernels_from_h100.yaml and gb200_kernels_from_h100.yaml from systems/calibrations/h100_kernels.yaml
(the commands are in their headers), e.g.:

    /usr/bin/python3 scripts/carry_calibration.py systems/calibrations/h100_kernels.yaml --sm-count 148 \\
        --gpu B200 --systems B200-calibrated --efficiency-scale 0.87 --scale-source "..." \\
        -o systems/calibrations/b200_kernels_from_h100.yaml

With --efficiency-scale F (and --scale-source saying where F comes from) the tensor-core
efficiencies (each GEMM pass's and the attention's) are multiplied by F: the throughput the GPU
sustains under a training step's load as a fraction of what its spec sheet's peak and the H100's
fractions of it give (`validate fit carried_efficiency` fits F to published runs, validation/nvidia_blackwell).

usage: carry_calibration.py SRC --sm-count N --gpu NAME --systems TEXT [--efficiency-scale F --scale-source TEXT] -o OUT
"""
import argparse
import os
import re


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("--sm-count", type=int, required=True)
    ap.add_argument("--gpu", required=True, help="the GPU carried to, for the header")
    ap.add_argument("--systems", required=True, help="the system files that use the result, for its source")
    ap.add_argument("--efficiency-scale", type=float, default=1.0,
                    help="factor on the tensor-core efficiencies (GEMM passes, attention)")
    ap.add_argument("--scale-source", default="", help="where the factor comes from, for the header")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    if not 0 < a.efficiency_scale <= 1.5:
        raise SystemExit(f"--efficiency-scale must be in (0, 1.5], got {a.efficiency_scale}")
    if a.efficiency_scale != 1.0 and not a.scale_source:
        raise SystemExit("--efficiency-scale needs --scale-source: where the factor comes from")
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
    if a.efficiency_scale != 1.0 or a.scale_source:
        header.append(f"# Tensor-core efficiencies (GEMM passes, attention) x {a.efficiency_scale:g}: {a.scale_source}.")
    out = []
    seen = set()
    in_tensor = False  # inside the gemm: or attention: block
    for line in lines:
        key = line.split(":", 1)[0]
        if key == "source":
            line = (f"source: {src} (fitted on H100 layer and in-stream kernel measurements) with {a.sm_count} SMs; "
                    f"efficiencies are fractions of the system peaks, so they carry over to {a.systems}")
        elif key == "sm_count":
            line = f"sm_count: {a.sm_count}"
        elif in_tensor and a.efficiency_scale != 1.0 and re.match(r"\s+(fprop|dgrad|wgrad|fwd|bwd): \{efficiency: ", line):
            line = re.sub(r"\{efficiency: ([0-9.e+-]+)",
                          lambda m: "{efficiency: " + f"{float(m.group(1)) * a.efficiency_scale:.9g}", line, count=1)
        if not line.startswith(" "):
            in_tensor = key in ("gemm", "attention")
        seen.add(key)
        out.append(line)
    if not {"source", "sm_count"} <= seen:
        raise SystemExit(f"{a.src}: not a kernel calibration (no source or sm_count)")
    with open(a.out, "w") as f:
        f.write("\n".join(header + out) + "\n")


if __name__ == "__main__":
    main()
