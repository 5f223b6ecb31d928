"""Write requirements/gpu-lock.txt from pip's resolution report of ``.[vllm,data]`` (``make gpu-lock``).

Why a second lock: vLLM 0.32.0 pins torch==2.13.0 and transformers<5.20, while the CPU lock (the versions CI
passes with) holds transformers 5.25, so ``pip install -c requirements/cpu-lock.txt '.[vllm]'`` cannot resolve.
A GPU node installs with ``-c requirements/gpu-lock.txt`` instead. Local version tags (torch's ``+cpu`` where a
CPU wheel lies on the resolving machine's disk) are dropped: on a GPU node the same version is PyPI's CUDA build.
"""

import json
import sys

HEADER = (
    "# Constraints for a GPU node: pip install -c requirements/gpu-lock.txt -e '.[vllm,data]'. Written by\n"
    "# 'make gpu-lock' from pip's resolution on Linux x86-64 (torch is PyPI's CUDA build of the version named).\n"
)


def pins(report: dict) -> list[str]:
    out = []
    for item in report["install"]:
        m = item["metadata"]
        if m["name"].lower() == "ablate":
            continue
        out.append(f"{m['name']}=={m['version'].split('+', 1)[0]}")
    return sorted(out, key=str.lower)


if __name__ == "__main__":
    report, target = sys.argv[1], sys.argv[2]
    with open(report) as f:
        lines = pins(json.load(f))
    with open(target, "w") as f:
        f.write(HEADER + "\n".join(lines) + "\n")
    print(f"wrote {target}: {len(lines)} pins")
