"""`hft-console doctor`: what this machine has and lacks to run the engine, check by check,
a module per domain; `run` runs them all.

Every check ends in a `CheckResult`: ok, warn, fail or skip, a one-line detail and, when not
ok, a one-line fix. Nothing here raises: a check that crashes or overruns its time is reported
as a failed check, never as a traceback.

How it stays bounded and harmless:
- The ONNX Runtime probe (`print_probe`) runs in a child interpreter: session creation prints
  over fds 1 and 2, loads CUDA libraries into the process, takes GPU memory, and on a broken
  driver can hang or crash; a child can be killed and its crash is a finding.
- Blocking checks (NVML, the library scan, credentials, configuration) run on daemon threads, so
  one that hangs in a driver call cannot hold up the report or the exit.
- Checks that wait on the network (llama-server, Bitget) run concurrently with short timeouts.

Only the standard library and `engine.gpu` are imported up front: the doctor has to work on an
installation whose onnxruntime, numba or numpy is broken, and say so.
"""
