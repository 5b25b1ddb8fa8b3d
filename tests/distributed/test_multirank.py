"""Multi-rank tests: each starts a 2-rank job through ``python -m ember.distributed.run``.

They skip when mpi4py/mpiexec are missing.  Every job has a bounded time; a failing rank
must end the whole job with an error naming it, well within that time, and leave no rank
running.
"""

import os
import re
import sys

from tests.distributed.launch import ROOT, WORKERS, assert_no_strays, launch, requires_mpi, run

pytestmark = requires_mpi


def _ok(result, marker: str, ranks: int = 2) -> None:
    assert result.returncode == 0, result.output[-6000:]
    for r in range(ranks):
        assert f"{marker} {r}" in result.output, result.output[-6000:]


def test_collectives_on_two_ranks_with_mismatch_checks():
    result = launch("collectives_worker.py", env={"EMBER_DISTRIBUTED_DEBUG": "DETAIL"})
    _ok(result, "COLLECTIVES-OK")
    assert "debug=DETAIL" in result.output
    assert_no_strays(result)


def test_ddp_matches_single_process_training():
    """MLP and MNIST CNN: same parameters on both ranks after every step, equal to one
    process on the concatenated batches; no_sync accumulation, unused parameters, bucket
    views, buffer broadcast, the state_dict prefix and join() on uneven inputs."""
    result = launch("ddp_worker.py", "all", timeout=150)
    _ok(result, "DDP-OK")
    assert_no_strays(result)


def test_sync_batch_norm_equals_batch_norm_on_the_global_batch():
    result = launch("syncbn_worker.py", timeout=90)
    _ok(result, "SYNCBN-OK")
    assert_no_strays(result)


def test_mismatched_collectives_are_reported_with_call_sites():
    result = launch("mismatch_worker.py", env={"EMBER_DISTRIBUTED_DEBUG": "DETAIL"})
    _ok(result, "MISMATCH-OK")
    worker = os.path.join(WORKERS, "mismatch_worker.py")
    assert f"rank 0: call #1 all_reduce(float32[4], op=SUM) at {worker}:" in result.output
    assert f"rank 1: call #1 broadcast(float32[4], src=0) at {worker}:" in result.output


def test_a_rank_that_raises_aborts_the_job_and_is_named():
    result = launch("failure_worker.py", "raise", timeout=60)
    assert result.returncode != 0
    assert "ValueError: simulated failure on rank 1" in result.output  # its traceback
    assert "rank 1 of 2 failed" in result.output
    assert "the job failed" in result.output and "rank 1 raised ValueError" in result.output
    assert "rank 0 finished" not in result.output
    assert_no_strays(result)


def test_a_rank_killed_mid_training_ends_the_job():
    result = launch("failure_worker.py", "kill", timeout=60)
    assert result.returncode != 0
    # Rank 1 is named even when mpiexec names rank 0, which its clean-up killed.
    assert re.search(r"the job failed \(mpiexec exit code \d+\): rank 1 \(pid \d+ on \S+\) "
                     r"(killed by signal 9 \(SIGKILL\)|ended first, without an error report)",
                     result.output), result.output[-3000:]
    assert "rank 0 finished" not in result.output
    assert_no_strays(result)


def test_a_hanging_rank_times_out_with_an_error_naming_it():
    result = launch("failure_worker.py", "hang", timeout=60)
    assert result.returncode != 0
    assert "DistBackendError" in result.output
    assert re.search(r"timed out after 3\.\d s on rank 0: rank 1 did not complete it",
                     result.output), result.output[-3000:]
    assert result.seconds < 40, result.seconds  # rank 1 sleeps 60 s: it was not waited for
    assert_no_strays(result)


def test_group_of_one_without_mpiexec():
    result = run([sys.executable, os.path.join(WORKERS, "single_worker.py")], timeout=60)
    assert result.returncode == 0 and "SINGLE-OK" in result.output, result.output[-4000:]


def test_example_reaches_the_single_process_accuracy():
    """examples/train_ddp.py under the launcher == the same script in one process."""
    args = ["--model", "mlp", "--epochs", "2", "--dropout", "0", "--train-size", "128",
            "--test-size", "64"]
    example = os.path.join(ROOT, "examples", "train_ddp.py")
    single = run([sys.executable, example, *args], timeout=120)
    ddp = launch(example, *args, timeout=120)
    assert single.returncode == 0, single.output[-4000:]
    assert ddp.returncode == 0, ddp.output[-4000:]
    assert "2 rank(s)" in ddp.output

    def last_epoch(text):
        m = re.search(r"epoch 2  train loss ([\d.]+) .* accuracy ([\d.]+)%", text)
        assert m, text
        return float(m.group(1)), float(m.group(2))

    (loss1, acc1), (loss2, acc2) = last_epoch(single.output), last_epoch(ddp.output)
    assert acc1 == acc2 and abs(loss1 - loss2) < 1e-4, (single.output, ddp.output)
