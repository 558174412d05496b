"""The frame loop compiled: many frames per call for strategies with a compiled planner
(:class:`~simsrv.strategies.base.FrameKernel`); the Python loop of
:func:`simsrv.simulation.simulate` runs the frames it does not cover."""
