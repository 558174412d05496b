"""A server frame's compiled steps and the registers they share.

:mod:`.kernels`: read the packets, build the frame (the frame rules), execute its
plan on the machine's compiled engine and commit it; :mod:`.state`: the registers.
The frame loop of one server (:mod:`simsrv.pipeline.frame_loop`) drives them for every
strategy, and a strategy's compiled planner
(:class:`~simsrv.strategies.base.FrameKernel`) runs many frames per call with them.
"""
