"""Fresh Python processes for tests that need one (a setting read when ember or a BLAS
library is loaded), started together so that their imports share the machine's cores
instead of running one after another."""

import subprocess
import sys


def run_together(jobs: dict, cwd=None, timeout: float = 300) -> dict:
    """Run each ``name: (code, env)`` as ``python -c code`` in environment `env` (None:
    this one's) and directory `cwd`, all at once; their `subprocess.CompletedProcess`
    results (text output) by name.  A process that fails raises AssertionError with its
    exit status and error output; one still running after `timeout` seconds is killed,
    with the others, and raises `subprocess.TimeoutExpired`."""
    started = {name: subprocess.Popen([sys.executable, "-c", code], env=env, cwd=cwd,
                                      text=True, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE)
               for name, (code, env) in jobs.items()}
    results = {}
    try:
        for name, process in started.items():
            out, err = process.communicate(timeout=timeout)
            results[name] = subprocess.CompletedProcess(process.args, process.returncode,
                                                        out, err)
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.communicate()
    for name, result in results.items():
        assert result.returncode == 0, f"{name}: exit status {result.returncode}\n{result.stderr}"
    return results
