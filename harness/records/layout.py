"""Every file and folder name of what the harness writes and reads, each named once.

A run directory, a group (trials or sweep), a compliance test's directory, a reproduction,
a bundle, a fleet directory, a site and a published tree. MLPerf's own names (LoadGen's
logs and configs, the files its checker and verify scripts expect) are facts of MLPerf:
they are spelled here exactly as MLPerf spells them. The formats' versions live beside their
readers and are listed in harness.cli.versions.
"""

from __future__ import annotations

from pathlib import Path

from harness import files

# --- a run directory: results/runs/<stamp>-<model>-<scenario>-<id>/ ---
RESULT_FILE = "result.json"
# files.py writes and reads the marker atomically and sits below this layer: it holds the name
INCOMPLETE = files.INCOMPLETE_FILE  # present while a run directory holds no finished result
JOB_FILE = "job.json"  # what a worker ran (harness.records.job)
RETRY_FILE = "retry.json"  # a first attempt sized too small asks to be run again
REPRODUCTION_TEXT = "reproduction.txt"  # reproduce of a published record: its printout
TELEMETRY_FILE = "telemetry.csv"
CPU_TELEMETRY_FILE = "cpu_telemetry.csv"
QUERY_LATENCIES_FILE = "query_latencies.npz"
# a generative run: per query, issue, first-token and end times (ns) and tokens generated
TOKEN_TIMES_FILE = "token_times.npz"
REPORT_MD, REPORT_HTML = "report.md", "report.html"
FIRST_ATTEMPT = "attempt-1"  # where a re-run moves the first attempt's own files
ACCURACY_DIR = "accuracy"  # the accuracy test, where MLPerf's submission layout puts it
ACCURACY_BLOCK = "accuracy.json"  # the scored block an accuracy test leaves in ACCURACY_DIR
PEAK_SEARCH_DIR = "peak-search"  # Server's peak search, when no rate was given
CONFIRM_PREFIX = "confirm-"  # Server's other confirming runs, kept as confirm-1/, confirm-2/...
PEAK_FILE = "peak.json"  # what the peak search found, in PEAK_SEARCH_DIR
STEP_PREFIX = "step-"  # each rate the peak search tried, in PEAK_SEARCH_DIR: step-1/, step-2/...
COMPLIANCE_DIR = "compliance"  # RUN/compliance/TEST0x/: each compliance test's own directory

# --- LoadGen's files, as LoadGen names them ---
SUMMARY_LOG = "mlperf_log_summary.txt"
DETAIL_LOG = "mlperf_log_detail.txt"
ACCURACY_LOG = "mlperf_log_accuracy.json"
TRACE_LOG = "mlperf_log_trace.json"
MLPERF_CONF = "mlperf.conf"  # the official settings, copied untouched
USER_CONF = "user.conf"  # our overrides
AUDIT_CONFIG = "audit.config"  # a compliance test's settings, read from LoadGen's cwd

# --- MLPerf's accuracy and verify files (its checker and verify scripts read these names) ---
ACCURACY_TXT = "accuracy.txt"
VERIFY_ACCURACY = "verify_accuracy.txt"
VERIFY_PERFORMANCE = "verify_performance.txt"
BASELINE_ACCURACY = "baseline_accuracy.txt"  # TEST01: the accuracy run's log, scored
COMPLIANCE_ACCURACY = "compliance_accuracy.txt"  # TEST01: its own log, scored alike
# --- ours, in a compliance test's directory ---
OUTCOME_FILE = "outcome.json"  # what the compliance worker left for its parent
VERDICT_FILE = "verdict.json"  # the test's verdict, read by the submission export
VERIFY_SWAP = "verify_swap.txt"  # the SWAP audit's counts and verdict
SWAP_FIRST_LOAD_DIR = "first-load"  # the SWAP audit's first performance test's logs

# --- a generative model's directory, as onnxruntime-genai reads it (its names, not ours) ---
GENAI_CONFIG = "genai_config.json"
TOKENIZER_JSON = "tokenizer.json"  # Hugging Face tokenizers' format, which genai reads
TOKENIZER_CONFIG = "tokenizer_config.json"

# --- a group: a directory of run directories and its summary file ---
TRIALS_FILE = "trials.json"
SWEEP_FILE = "sweep.json"
LOAD_FILE = "load.json"  # a load sweep: Server's latency against the arrival rate
GROUP_FILES = (TRIALS_FILE, SWEEP_FILE, LOAD_FILE)

# --- a reproduction: a group of reruns beside what was recorded ---
REPRODUCTION_FILE = "reproduction.json"
RECORDED_DIR = "recorded"  # where a bundle opens: inside the reproduction's group

# --- a bundle: a tar of runs and a signed manifest ---
BUNDLE_SUFFIX = ".tar"
MANIFEST_FILE = "MANIFEST.json"
SIGNATURE_FILE = "MANIFEST.sig"
BUNDLE_RUNS_DIR = "runs"  # the bundle's top folder: one entry per run or group given

# --- a fleet directory ---
FLEET_FILE = "fleet.json"
TASK_FILE = "task.json"
TASK_RESULT_FILE = "task-result.json"  # one attempt's record, written by `harness fleet task`
TASKS_DIR = "tasks"  # tasks/<index>/: a task's file and its attempts
MODELS_DIR = "models"  # the models staged for every node
LOGS_DIR = "logs"  # the scheduler's logs
K8S_MANIFEST = "job.yaml"  # the Kubernetes Job a fleet's plan writes
MERGED_JSON = "fleet-merged.json"
MERGED_MD = "fleet-merged.md"

# --- comparisons, sites and published records ---
COMPARE_MD, COMPARE_HTML = "compare.md", "compare.html"
SITE_FILE = "site.json"
INDEX_HTML = "index.html"
REPORT_DIR = "report"  # a site entry's report (report.md, report.html), beside its index.html
PUBLISHED_FILE = "published.json"  # one imported MLPerf result (harness import mlperf)

# --- a submission tree, as MLPerf's checker expects it ---
MEASUREMENTS_FILE = "measurements.json"
README_FILE = "README.md"
CHECKER_OUTPUT = "check-submission.txt"  # what MLPerf's checker said of the exported tree
PERFORMANCE_RUN = "performance/run_1"  # a scenario's performance run, under its folder
PERFORMANCE_DIR = "performance"
RESULTS_DIR = "results"

# The files of a run directory that a re-run moves aside: the first attempt's own, not the
# accuracy test's. Every file a performance run writes is one, so a run directory whose
# result.json came back from a confirm-N/ never pairs it with another run's stamps.
ATTEMPT_FILES = (
    JOB_FILE,
    RETRY_FILE,
    SUMMARY_LOG,
    DETAIL_LOG,
    ACCURACY_LOG,
    TRACE_LOG,
    MLPERF_CONF,
    USER_CONF,
    TELEMETRY_FILE,
    CPU_TELEMETRY_FILE,
    QUERY_LATENCIES_FILE,
)


def result_file(run_dir: Path) -> Path:
    """A run directory's result.json."""
    return run_dir / RESULT_FILE


def detail_log(run_dir: Path) -> Path:
    """A LoadGen test's detail log, in the directory LoadGen ran in."""
    return run_dir / DETAIL_LOG


def accuracy_log(run_dir: Path) -> Path:
    """A run's accuracy test's LoadGen accuracy log."""
    return run_dir / ACCURACY_DIR / ACCURACY_LOG


def compliance_dir(run_dir: Path, test: str) -> Path:
    """Where a compliance test of `run_dir` (TEST01, TEST04) leaves its files."""
    return run_dir / COMPLIANCE_DIR / test
