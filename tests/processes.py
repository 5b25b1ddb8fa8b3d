"""Fresh Python processes for tests that need one (a setting read when ember or a BLAS
library is loaded), started together so that their imports share the machine's cores
instead of running one after another."""

import subprocess
import sys


def run_together(jobs: dict, cwd=None) -> dict:
    """Run each ``name: (code, env)`` as ``python -c code`` in environment `env` (None:
    this one's) and directory `cwd`, all at once; their `subprocess.CompletedProcess`
    results (text output) by name.  A process that fails raises AssertionError with its
    exit status and error output."""
    started = {name: subprocess.Popen([sys.executable, "-c", code], env=env, cwd=cwd,
                                      text=True, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE)
               for name, (code, env) in jobs.items()}
    results = {}
    for name, process in started.items():
        out, err = process.communicate()
        results[name] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    for name, result in results.items():
        assert result.returncode == 0, f"{name}: exit status {result.returncode}\n{result.stderr}"
    return results
