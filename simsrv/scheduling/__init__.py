"""Work decomposition for parallel strategies: entity groups and the balancers that place them.

:mod:`~simsrv.scheduling.groups` builds the frame's interaction graph and its connected
components; :mod:`~simsrv.scheduling.balancers` assigns weighted jobs to processors.  Plain
numpy/scipy functions: no simulated time here.
"""
