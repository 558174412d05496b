"""One run, from a scenario file to its result.

:mod:`.load` turns TOML and ``--set`` overrides into a :class:`~simsrv.scenario.Scenario`
and is the one place that imports every registry (strategies, map kinds, mobility models,
zonings, interconnect profiles, engines, platforms); :mod:`.simulation` runs its frames
(world -> workload -> strategy plan -> machine) with :mod:`.frame_loop`, :mod:`.cluster`
the frames of several servers; :mod:`.trace_stream` and :mod:`.frame_stream` digest and
check the records as they come; :mod:`.summary` and :mod:`.result` make the run's metrics
and :class:`~.result.RunResult`.
"""
