"""lab_utils has no import circle: every module can be read, and changed, without its importers."""

import ast
import subprocess
import sys

from lab_utils.paths import ROOT

PACKAGE = ROOT / "lab_utils"


def module_name(path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path) -> set[str]:
    """The lab_utils modules a module imports (at any level, type-checking blocks included)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            target = ".".join(filter(None, [base, node.module or ""]))
            found |= {target} | {f"{target}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("lab_utils")}


def test_no_module_imports_one_that_imports_it_back():
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    # Importing a package runs its __init__, which may import every module in it: a package
    # importing its own modules is not a circle, so edges go module -> module only.
    graph = {name: {t for t in imports(path) if t in modules and t != name and not name.startswith(t + ".")}
             for name, path in modules.items() if not path.name == "__init__.py"}
    circles = []

    def visit(name, trail):
        for target in sorted(graph.get(name, ())):
            if target in trail:
                circles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif len(trail) < 12:
                visit(target, trail + [target])

    for name in sorted(graph):
        visit(name, [name])
    assert not circles, "import circles:\n" + "\n".join(sorted(set(circles)))


def test_the_reflection_package_loads_the_sdk_only_for_the_names_that_need_it():
    """Lesson 01's tests switch off lesson 07's trigger functions, which imports lab_utils.reflection in every
    kernel that runs or grades lesson 01: the package leaves the model's SDK to reflect and loop, and still
    gives their names to lesson 07's notebooks handed out before they left it."""
    code = ("import sys, lab_utils.reflection\n"
            "print(sorted({'anthropic', 'httpx2'} & set(sys.modules)))\n"
            "from lab_utils.reflection import Reflector, simulate\n"
            "from lab_utils.reflection.loop import simulate as in_loop\n"
            "from lab_utils.reflection.reflect import Reflector as in_reflect\n"
            "print(Reflector is in_reflect, simulate is in_loop)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-1500:]
    loaded, found = run.stdout.splitlines()
    assert loaded == "[]", f"importing lab_utils.reflection loads {loaded}"
    assert found == "True True", "lab_utils.reflection.Reflector and .simulate must be reflect's and loop's"
