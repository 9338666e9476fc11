"""Recovery is the registry's: `ops/recovery.py` loops over the structures phase by phase and holds no rule of
theirs; each structure that recovers (a `recovery.py` in its folder) plans its own part."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from cli_helpers import fixture_copy

from rmqtool.engine.config import StoreConfig
from rmqtool.ops import recovery
from rmqtool.structures.registry import REGISTRY
from rmqtool.structures.structure import Structure

ROOT = Path(__file__).resolve().parents[2]
STRUCTURES = ROOT / "rmqtool" / "structures"
SHARED = ("rmqtool.structures", "rmqtool.structures.registry", "rmqtool.structures.recoveryplan",
          "rmqtool.structures.cuts")
KERNEL = "rmqtool.structures.consumequeue.dispatchkernel"  # what the counted re-dispatch runs
KERNELS = (KERNEL, "rmqtool.structures.consumequeue.dispatchkernel")


def structure_imports(path: Path) -> list[str]:
    """Every `rmqtool.structures...` module or name `path` imports, as `module` or `module:name`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("rmqtool.structures")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rmqtool.structures"):
            found += [f"{node.module}:{a.name}" for a in node.names]
    return found


def test_ops_recovery_imports_no_structures_recovery_rule():
    """Neither a structure's recovery module nor any of its folders: only the registry, the plan and cuts."""
    imports = structure_imports(ROOT / "rmqtool" / "ops" / "recovery.py")
    own = [i for i in imports if i.split(":")[0] not in SHARED + KERNELS]
    assert own == [], f"ops/recovery.py reaches into a structure's folder: {own}"
    assert imports, "ops/recovery.py is expected to loop over the registry"


@pytest.mark.parametrize("owner", [s for s in REGISTRY if (STRUCTURES / s.folder / "recovery.py").is_file()],
                         ids=lambda s: s.name)
def test_every_structure_with_recovery_rules_plans_its_own_part(owner):
    assert type(owner).plan_recovery is not Structure.plan_recovery, (
        f"structures/{owner.folder}/recovery.py holds rules its structure does not plan")


class Witness(Structure):
    """A structure the registry did not have: what it plans must reach the plan, in the broker's phase order."""

    name = "witness"

    def __init__(self) -> None:
        self.phases: list[str] = []
        self.records = 0

    def plan_recovery(self, phase, view, plan, context) -> None:
        self.phases.append(phase)
        if phase == "cut":
            plan.deleted.append((str(view.paths.root / "witness"), "the witness's own rule"))

    def redispatch_counter(self, view, plan):
        return self

    def count(self, found, topics) -> None:
        self.records += len(found)


def test_plan_recovery_asks_each_registry_structure_for_its_part(tmp_path, monkeypatch):
    store = fixture_copy(tmp_path)
    (store / "abort").touch()  # a crash: the re-dispatch reads from the recovery start
    witness = Witness()
    monkeypatch.setattr(recovery, "REGISTRY", (*REGISTRY, witness))
    plan = recovery.plan_recovery(store, StoreConfig.from_file(ROOT / "fixtures" / "broker.conf")[0])
    assert witness.phases == ["load", "start", "end", "past-end", "cut"]
    assert (str(store / "witness"), "the witness's own rule") in plan.deleted
    assert witness.records > 0


@pytest.mark.parametrize("module", sorted(STRUCTURES.glob("*/recovery.py")), ids=lambda p: p.parent.name)
def test_structures_recovery_takes_the_plan_by_its_type(module):
    """RecoveryPlan lives below the structures that fill it: none takes it as `Any`."""
    untyped = [f"{node.name}({arg.arg}: {ast.unparse(arg.annotation) if arg.annotation else ''})"
               for node in ast.walk(ast.parse(module.read_text())) if isinstance(node, ast.FunctionDef)
               for arg in node.args.args if arg.arg == "plan" and not (
                   arg.annotation is not None and ast.unparse(arg.annotation) == "RecoveryPlan")]
    assert untyped == []
