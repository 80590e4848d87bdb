"""nbgrader configuration for the course. Every command runs from the repository root with no flags:

    nbgrader generate_assignment transformers   # assignments/ -> release/ (+ gradebook.db)
    nbgrader autograde transformers             # submitted/<student>/transformers/ -> autograded/ (+ scores)
    nbgrader generate_feedback transformers     # autograded/ -> feedback/<student>/transformers/*.html
    nbgrader export                             # gradebook -> grades.csv

See book/instructors.md for the whole workflow.
"""
import os
import warnings

c = get_config()  # noqa: F821 -- provided by traitlets when it loads this file

HERE = os.path.dirname(os.path.abspath(__file__))

# --- Course directory layout (the folder names are the pipeline; see the design notes) ---------------------------
c.CourseDirectory.root = HERE  # the repository root ('.' when run from it), as an absolute path
c.CourseDirectory.source_directory = "assignments"
c.CourseDirectory.release_directory = "release"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
# Gradebook: a local SQLite file, ignored by git (student data never enters the repository). For a shared
# course server point this at PostgreSQL instead, e.g. "postgresql+psycopg2://user@host/course".
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(HERE, "gradebook.db")
# nbgrader's default course id is empty; a PostgreSQL gradebook rejects that (it enforces the assignment -> course
# foreign key, sqlite does not), so the course is named.
c.CourseDirectory.course_id = "transformers-by-hand"

# nbgrader skips these names wherever it copies an assignment's files (its defaults). An assignment's own data (its
# planted submissions, the solution's grading time) is in instructor/<id>/, outside nbgrader's folders: nothing to skip.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# A fresh clone has no gradebook: generate_assignment creates the assignment record, autograde creates students
# it has not seen (register them beforehand with `nbgrader db student add` or `nbgrader db student import`).
c.GenerateAssignment.create_assignment = True
# Generation starts with the course's check of what grading will need (coursekit/generate.py): every name a test uses
# is defined by a read-only cell or declared by a solution cell (the checker takes nothing else from a student's
# kernel), else generation stops naming the cell; and the solution's grading time, from which each submission's time
# budget follows, is measured when the notebook's code changed (instructor/<id>/budget.json). Then nbgrader's
# own steps, as it lists them.
c.GenerateAssignment.preprocessors = [
    "coursekit.generate.CheckPlan",
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearSolutions",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.Autograde.create_student = True

# --- Autograding --------------------------------------------------------------------------------------------------
# Per-cell time limit (seconds) for the grading kernel. The slowest cell of the solved notebook (imports) takes
# a few seconds; a test cell well under one.
c.Execute.timeout = 30
c.Execute.startup_timeout = 120
# Once a notebook has run, its kernel is killed rather than asked to shut down and waited for (a polite shutdown
# with PyTorch loaded is a noticeable share of each submission): nothing in the kernel is needed after the last cell.
c.Execute.shutdown_kernel = "immediate"
# Graded cells a student deleted are put back from the gradebook before grading (with a note in the cell).
c.OverwriteCells.add_missing_cells = True

# --- Quiet logs: what an instructor reads is signal ---------------------------------------------------------------
# Two lines nbgrader prints on every run that ask nothing of you (coursekit.logs.KnownNoise says which and why).
c.Application.logging_config = {"filters": {"noise": {"()": "coursekit.logs.KnownNoise"}},
                                "handlers": {"console": {"filters": ["noise"]}}}
# SQLAlchemy 2 warns about nbgrader's autoflush pattern on every submission (SAWarning "... not in session"); the
# rows are written all the same (tests/e2e/test_pipeline.py reads them back).
warnings.filterwarnings("ignore", message=r".*not in session, add operation along", module=r"nbgrader\.")

# --- Feedback ----------------------------------------------------------------------------------------------------
# Feedback is rendered from the autograded notebook, where nbgrader restored the hidden tests and the submission's
# code wrote the outputs. coursekit/feedback.py keeps only what the checker vouches for: a failing test's name, its
# message without hidden-test code, and the failing line if it is a visible check; stock ClearHiddenTests then
# removes the hidden regions (jupyter/nbgrader#1363). The graders' model answers (coursekit/autograde/model_answers.py)
# go first, and you are warned about answers no grader has scored yet.
c.GenerateFeedback.preprocessors = [
    "coursekit.feedback.RemoveGradersOnly",
    "nbgrader.preprocessors.GetGrades",
    "coursekit.feedback.WarnUngraded",
    "coursekit.feedback.TrustedOutputs",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# Stock HTML export of the feedback page, less a whole-page pass it cannot use (a feedback page has no image): about
# half the cost of each page.
c.GenerateFeedback.exporter_class = "coursekit.feedback.FeedbackExporter"
# Grading on submit (`python -m coursekit grade --watch`, the hosted course): each student's feedback is released as
# soon as their submission is graded. "visible": the visible checks' verdicts only (a hidden test's result comes with
# your final feedback, so resubmitting cannot probe hidden tests); "all": every autograded test; "off": none.
# Your own generate_feedback/release_feedback replaces it.
c.FeedbackOnSubmit.mode = "visible"

# --- Collecting from a learning platform ------------------------------------------------------------------------
# Put Canvas's or Moodle's "download all submissions" zip into downloaded/<assignment>/archive/, then
# `nbgrader zip_collect <assignment>`: coursekit/collect.py reads the student id and notebook from the platform's
# file names (older re-uploads, non-notebooks and late flags are named in warnings; nothing is deleted).
c.ZipCollectApp.collector_plugin = "coursekit.collect.PlatformCollector"

# --- The exchange: students fetch and submit on a JupyterHub (hub/, book/instructors.md "Hosting the course") ------
# Collecting from nbgrader's exchange copies only regular files and folders of a submission, never follows a link, skips
# FIFOs, devices and files over c.GradingSandbox.max_file_mb, and takes a student's submission only from a folder that
# student owns; every file left out is named with its student (coursekit/exchange.py). The hub's own configuration
# (hub/nbgrader_config.py) sets the exchange's folder and the other steps (fetch, submit, release, feedback).
c.ExchangeFactory.collect = "coursekit.exchange.SafeExchangeCollect"

# --- Export ------------------------------------------------------------------------------------------------------
# nbgrader's CSV, after a warning that names every written answer not graded yet (it would count as 0). For a
# platform's grade import: --exporter=coursekit.export.CanvasCsvExport or ...MoodleWorksheetExport.
c.ExportApp.plugin_class = "coursekit.export.CheckedCsvExport"

# --- Release -----------------------------------------------------------------------------------------------------
# What replaces a solution in the release: a stub whose error says what to do when a check runs it.
c.ClearSolutions.code_stub = {
    "python": '# YOUR CODE HERE\nraise NotImplementedError("not done yet: replace this line with your code")'
}

# --- Grading: the sandbox and the checker (book/instructors.md "What a submission can and cannot do") -------------
# Every grading kernel runs in a sandbox (coursekit/sandbox/): a private in-memory copy of its files is the only
# writable folder, nothing else of the course, your home or your environment is visible, there is no network, every
# process it starts dies with it, and memory (all its processes together), processes, CPU share, file sizes, outputs
# and the submission's total time are capped. The grading kernelspec names the sandbox's provisioner; the exporter
# refuses to start grading on a machine where the sandbox cannot be built, and leaves out (naming it) a student whose
# submission folder holds links, devices, FIFOs, oversized files or too many files; the others are graded.
c.Execute.kernel_name = "course-grading"
c.Autograde.exporter_class = "coursekit.sandbox.provisioner.SandboxedExporter"
c.GradingSandbox.memory_limit_mb = 4096  # per submission, all its processes together
c.GradingSandbox.wall_limit_s = 600      # most per submission, kernel start to last test (c.Execute.timeout is per cell);
# a submission's budget is budget_factor (5) x the solution's grading time (instructor/<id>/budget.json,
# measured by generate_assignment), at least budget_floor_s (60), at most this
# c.GradingSandbox.enabled = False  # grades WITHOUT the sandbox (warns on every run): only for trusted notebooks

# Stock preprocessor list, with GradingExecute in place of Execute (coursekit/autograde/execute.py): the student's kernel runs the
# notebook for the record, but every test cell runs in the checker (coursekit/checker/), which runs your read-only and
# test cells from the gradebook in your source's order and reaches the student's answers (the names your solution
# cells define) through a data-only bridge, so no code of a submission can change a verdict. Each submission is graded
# in a process of its own (coursekit/autograde/process.py: memory-capped, killed from outside when its time budget is
# spent), so nothing one submission does reaches the next. Then two output filters and the model answers for graders
# (coursekit/autograde/model_answers.py: inserted into autograded/ only).
c.Autograde.autograde_preprocessors = [
    "coursekit.autograde.execute.GradingExecute",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "coursekit.autograde.outputs.TruncateOutput",
    "coursekit.autograde.outputs.PassiveOutputs",
    "coursekit.autograde.markup.InertMarkup",  # a student's HTML in markdown shows as text in the formgrader, never runs
    "nbgrader.preprocessors.SaveAutoGrades",
    "coursekit.autograde.model_answers.ModelAnswers",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# --- Grading on many machines: the queue (coursekit/queue/; book/instructors.md "Grading a large cohort") -----------
# `python -m coursekit grade A --queue` puts one job per submission in a queue that `python -m coursekit worker` takes
# from on any machine; it lives in the gradebook's PostgreSQL database (schema grading_queue) unless db_url says
# otherwise. A lost worker's job is taken up by another after lease_s seconds without its heartbeat.
# c.GradingQueue.db_url = "postgresql://user:password@host/dbname"   # default: the gradebook's (if PostgreSQL)
# c.GradingQueue.lease_s = 45
# c.GradingQueue.max_attempts = 3      # per job, failed autogrades and lost workers together
# c.GradingQueue.max_gradings = 5      # grade --watch: automatic gradings per student and assignment
