"""Platform profiles: the modelled hardware and its costs, as TOML data files.

Like a SimGrid platform file, a profile is separate from the application: it says how fast
the CPUs are and what every modelled operation costs there, in microseconds.  Built-in
profiles live beside this file; ``machine.platform`` may also be a path to a ``.toml`` file.
"""

from simsrv.platforms.profile import Costs, Platform, load_platform, platform_names

__all__ = ["Costs", "Platform", "load_platform", "platform_names"]
