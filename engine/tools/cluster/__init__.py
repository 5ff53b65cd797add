"""Where the research commands' independent runs (backtests, trials' backtests) execute: in
worker processes on this machine, or as tasks on a Ray cluster (`--ray ADDRESS`)."""
