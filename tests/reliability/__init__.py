"""The crash and contention soak: real producer and consumer processes on one database, killed
with SIGKILL at random moments, and a checker that proves from their logs that nothing was lost.

    python -m tests.reliability.soak --seconds 600
"""
