"""One sweep over a SLURM cluster through dask-jobqueue, one Dask worker per GPU.

    pip install dask-jobqueue          # where this runs (a login node); normbench on the nodes
    python configs/cluster/slurm_dask.py CONFIG OUT [JOBS]

Each job asks for one GPU and starts one worker with a GPU resource, as a non-daemon process
(its measuring child needs that); the scheduler's allowed-failures is 0, so a case that kills
its worker is recorded once as an error instead of killing three more.  Adjust queue, cores,
memory and walltime to the site.
"""
import subprocess
import sys

import dask
from dask_jobqueue import SLURMCluster

# the scheduler runs in this process: a case that kills its worker is recorded once
dask.config.set({"distributed.scheduler.allowed-failures": 0})
config, out = sys.argv[1], sys.argv[2]
jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 8
cluster = SLURMCluster(
    queue="gpu", cores=8, processes=1, memory="64GB", walltime="04:00:00",
    job_extra_directives=["--gres=gpu:1"],
    worker_extra_args=["--resources", "GPU=1", "--nthreads", "1"],
    job_script_prologue=["export DASK_DISTRIBUTED__WORKER__DAEMON=False"],
    scheduler_options={"dashboard_address": ":8787"},
)
cluster.scale(jobs=jobs)
try:
    # SLURM may queue the jobs for longer than the run waits for its first worker (300 s):
    # the run starts once one has joined (the others join as their jobs start)
    cluster.wait_for_workers(1)
    rc = subprocess.run([sys.executable, "-m", "normbench", "run", config, "--out", out,
                         "--scheduler", cluster.scheduler_address]).returncode
finally:
    cluster.close()
sys.exit(rc)
