"""Hidden tests draw their random inputs from GRADING_SALT (set by the checker per student and submission), so they
must accept every correct answer for *every* salt, not only for the seeds they were written with. For every
assignment: the source notebook's solutions run once in this process (demonstrations skip themselves, as while
grading), then every salted test cell runs against them for many salts; a planted mistake that the fixed seed catches
is caught for every salt too, and every planted correct alternative passes for many salts."""
from __future__ import annotations

import random
import textwrap

import pytest

from conftest import ASSIGNMENTS, COURSE

SALTS = [0] + random.Random(2026).sample(range(1, 2 ** 48), 200)  # a 2 % flaw shows with 98 % probability


def salted(cell) -> bool:
    return "GRADING_SALT" in cell.source


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def solved(request, tmp_path_factory):
    """The namespace of the solved source notebook, every cell but the test cells run (cwd: a scratch folder)."""
    import torch

    hw = COURSE.assignment(request.param)
    nb = hw.source
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
    return nb, namespace, hw


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
    nb, _, hw = solved
    assert len([c for c in nb.cells if salted(c)]) >= min(5, len(hw.autograded_cells) // 2)


def test_the_solution_passes_the_salted_hidden_tests_for_every_salt(solved):
    nb, namespace, _ = solved
    failures = {salt: found for salt in SALTS if (found := run_tests(nb, namespace, salt))}
    assert not failures, f"{len(failures)} of {len(SALTS)} salts fail the solution, e.g. {next(iter(failures.items()))}"


def with_plant(nb, namespace: dict, function: str, code: str) -> dict:
    """``namespace`` with ``code`` as the body of ``function`` instead of its solution."""
    planted = dict(namespace)
    body = textwrap.indent(textwrap.dedent(code).strip("\n"), "    ")
    source = next(c.source for c in nb.cells if c.source.lstrip().startswith(f"def {function}("))
    header = source[:source.index('"""', source.index('"""') + 3) + 3]  # signature and docstring
    exec(header + "\n" + body + "\n", planted)
    return planted


def test_a_planted_mistake_is_caught_for_every_salt(solved):
    """For each function with salted tests, its first planted mistake that the fixed seed (salt 0) catches."""
    nb, namespace, hw = solved
    wrong = [sub.bodies for sub in hw.planted.catalog(hw)[0]] if hasattr(hw.planted, "catalog") else []
    tried = set()
    for bodies in wrong:
        ((function, code),) = bodies.items()
        own = hw.cells_of(function)
        if function in tried or not any(salted(hw.cells[g]) for g in own):
            continue
        planted = with_plant(nb, namespace, function, code)
        if not set(run_tests(nb, planted, 0)) & own:
            continue  # this mistake is caught by an unsalted check, or not by a test of its own
        tried.add(function)
        missed = [salt for salt in SALTS[:12] if not set(run_tests(nb, planted, salt)) & own]
        assert not missed, f"a planted mistake of {function} passes every salted test cell with salts {missed}"
    assert tried, "no planted mistake checked"


def test_every_correct_alternative_passes_for_many_salts(solved):
    """The catalog's correct alternatives (float32 scales, other softmax forms, ...) against fresh random inputs."""
    nb, namespace, hw = solved
    right = [sub.bodies for sub in hw.planted.catalog(hw)[1]] if hasattr(hw.planted, "catalog") else []
    checked = 0
    for bodies in right:
        ((function, code),) = bodies.items()
        if not any(f"{function}(" in c.source for c in nb.cells if salted(c)):
            continue
        planted = with_plant(nb, namespace, function, code)
        failures = {salt: found for salt in SALTS[:25] if (found := run_tests(nb, planted, salt))}
        assert not failures, f"{function}: a correct alternative fails with salt {next(iter(failures.items()))}"
        checked += 1
    assert checked >= min(3, len(right))
