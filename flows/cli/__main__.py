"""`python -m autotriton.flows.cli`: the same as the `autotriton` command."""

from autotriton.flows.cli import main

main()
