"""liboffgraph.so exports exactly the functions offgraph.h declares (OG_API), each under the version node
OFFGRAPH_ABI_<OG_ABI_VERSION>, and its SONAME is liboffgraph.so.<major>.

Usage: symbols_test.py LIBOFFGRAPH_SO OFFGRAPH_H
"""
import re
import subprocess
import sys


def main() -> int:
    lib, header = sys.argv[1], sys.argv[2]
    text = open(header).read()
    declared = set(re.findall(r"OG_API\s[^;{]*?\b(og_\w+)\s*\(", text))
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    exported = set()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] not in ("A",):  # A: the version node
            exported.add(parts[2].split("@")[0])
    ok = True
    if exported != declared:
        print("exported but not declared:", sorted(exported - declared))
        print("declared but not exported:", sorted(declared - exported))
        ok = False
    # Every export carries the ABI's version node (OG_ABI_VERSION, cmake/offgraph.map).
    abi = re.search(r"#define OG_ABI_VERSION (\d+)", text)
    node = f"OFFGRAPH_ABI_{abi.group(1)}" if abi else None
    unversioned = [l.split()[2] for l in nm.splitlines()
                   if len(l.split()) >= 3 and l.split()[1] != "A" and not l.split()[2].endswith("@@" + str(node))]
    if not abi or unversioned:
        print("exports without the version node", node, ":", unversioned[:5])
        ok = False
    readelf = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[(.*?)\]", readelf)
    if not m or not re.fullmatch(r"liboffgraph\.so\.\d+", m.group(1)):
        print("bad SONAME:", m.group(1) if m else None)
        ok = False
    print(f"{len(declared)} functions declared, {len(exported)} exported, SONAME {m.group(1) if m else None}")
    return 0 if ok and len(declared) > 40 else 1


if __name__ == "__main__":
    sys.exit(main())
