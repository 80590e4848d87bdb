"""Hidden tests draw their random inputs from the per-submission GRADING_SALT (coursekit.sandbox), so they must
accept every correct answer for *every* salt, not only for the seeds they were written with. Here the source
notebook's solutions run once in this process (demonstrations skip themselves, as while grading), then every salted
test cell runs against them for many salts; and a planted mistake that the fixed seed catches is caught for every
salt too."""
from __future__ import annotations

import random
import textwrap

import pytest

from conftest import ROOT
import catalog
from coursekit import cohort

SALTS = [0] + random.Random(2026).sample(range(1, 2 ** 48), 200)  # a 2 % flaw shows with 98 % probability


def salted(cell) -> bool:
    return "GRADING_SALT" in cell.source


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """The namespace of the solved source notebook, every cell but the test cells run (cwd: a scratch folder)."""
    import torch

    nb = cohort.read(cohort.source_path(ROOT))
    namespace: dict = {}
    threads = torch.get_num_threads()
    # The notebook runs in this process: give back what it changes (environment, working folder, torch's threads),
    # so the tests that run after these in the same worker see the process as it was.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NBGRADER_EXECUTION", "autograde")
        patch.chdir(tmp_path_factory.mktemp("salts"))
        try:
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type == "code" and not (meta.get("grade") and not meta.get("solution")):
                    exec(compile(cell.source, f"<{meta.get('grade_id', 'cell')}>", "exec"), namespace)
        finally:
            torch.set_num_threads(threads)
    return nb, namespace


def run_tests(nb, namespace: dict, salt: int) -> dict[str, str]:
    """{grade_id: error} of the salted test cells that fail with ``salt``."""
    failed = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADING_SALT", str(salt))
        for cell in filter(salted, nb.cells):
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            try:
                exec(compile(cell.source, f"<{grade_id}>", "exec"), dict(namespace))
            except Exception as error:  # noqa: BLE001 -- any failure of a test cell is the finding
                failed[grade_id] = f"{type(error).__name__}: {str(error)[:300]}"
    return failed


def test_enough_test_cells_are_salted(solved):
    nb, _ = solved
    assert len([c for c in nb.cells if salted(c)]) >= 5


def test_the_solution_passes_the_salted_hidden_tests_for_every_salt(solved):
    nb, namespace = solved
    failures = {salt: found for salt in SALTS if (found := run_tests(nb, namespace, salt))}
    assert not failures, f"{len(failures)} of {len(SALTS)} salts fail the solution, e.g. {next(iter(failures.items()))}"


def with_plant(nb, namespace: dict, plant) -> dict:
    """``namespace`` with ``plant``'s body in place of its function's solution."""
    planted = dict(namespace)
    body = textwrap.indent(textwrap.dedent(plant.code).strip("\n"), "    ")
    source = next(c.source for c in nb.cells if c.source.lstrip().startswith(f"def {plant.function}("))
    header = source[:source.index('"""', source.index('"""') + 3) + 3]  # signature and docstring
    exec(header + "\n" + body + "\n", planted)
    return planted


@pytest.mark.parametrize("key", ["no_scaling", "mean_divides_by_padded_length", "accuracy_threshold_half"])
def test_a_planted_mistake_is_caught_for_every_salt(solved, key):
    nb, namespace = solved
    plant = next(p for p in catalog.WRONG if p.key == key)
    wrong = with_plant(nb, namespace, plant)
    own = cohort.cells_of(plant.function, ROOT)
    missed = [salt for salt in SALTS[:12] if not set(run_tests(nb, wrong, salt)) & own]
    assert not missed, f"{key} passes every salted test cell with salts {missed}"


def test_every_correct_alternative_passes_for_many_salts(solved):
    """The catalog's correct alternatives (float32 scales, other softmax forms, ...) against fresh random inputs."""
    nb, namespace = solved
    checked = 0
    for plant in catalog.RIGHT:
        if not any(f"{plant.function}(" in c.source for c in nb.cells if salted(c)):
            continue
        right = with_plant(nb, namespace, plant)
        failures = {salt: found for salt in SALTS[:25] if (found := run_tests(nb, right, salt))}
        assert not failures, f"{plant.key} ({plant.note}) fails with salt {next(iter(failures.items()))}"
        checked += 1
    assert checked >= 5
