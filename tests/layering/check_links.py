#!/usr/bin/env python3
"""Fails when a server room's library calls into a room above it.

The include check (check_layering.py) sees #include lines; a function
declared by hand in a lower room and defined in a higher one (how the
command table once called every family's rows) passes it and still ties the
rooms together. Each room is its own static library (server/CMakeLists.txt
writes them, bottom-up, to <build>/server_rooms.txt); this reads every
archive's symbols with nm and fails when a room needs a symbol that only a
room above it defines. It also checks that CMake's order is the include
check's order.
Usage: check_links.py <build dir>/server_rooms.txt
"""
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_layering import LAYERS, ROOM_OF_LAYER  # noqa: E402

# nm's letters for a symbol an archive defines for others to use. Weak ones
# (W, V, u: inline functions, templates, vtables) are defined wherever they
# are used, so they say nothing about which room owns them.
STRONG = set("TDBRG")


def symbols(archive):
    """(defined, undefined) mangled names of one static library."""
    out = subprocess.run(["nm", "--format=posix", archive], check=True,
                         capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or line.endswith(":"):
            continue  # "archive[member.o]:" headers
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in STRONG:
            defined.add(name)
    return defined, undefined - defined


def demangle(name):
    return subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()


def main():
    rooms = []
    for line in pathlib.Path(sys.argv[1]).read_text().splitlines():
        room, archive = line.split(" ", 1)
        rooms.append((room, archive))
    server_layers = [layer for layer in LAYERS if layer.startswith("server")]
    expected = [ROOM_OF_LAYER.get(layer, layer.removeprefix("server/")) for layer in server_layers]
    problems = []
    if [room for room, _ in rooms] != expected:
        problems.append(f"server/CMakeLists.txt's rooms {[r for r, _ in rooms]} are not "
                        f"check_layering.py's order {expected}")
    owner = {}
    needs = []
    for index, (room, archive) in enumerate(rooms):
        defined, undefined = symbols(archive)
        for name in defined:
            owner.setdefault(name, index)
        needs.append(undefined)
    for index, undefined in enumerate(needs):
        for name in sorted(undefined):
            above = owner.get(name)
            if above is not None and above > index:
                problems.append(f"{rooms[index][0]} calls {demangle(name)}, "
                                f"defined in {rooms[above][0]} above it")
    for problem in problems[:50]:
        print(problem)
    print(f"{len(rooms)} room libraries checked, {len(problems)} call(s) up the layers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
