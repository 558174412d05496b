"""``python -m simsrv`` runs the command line."""

from simsrv.cli.main import main

raise SystemExit(main())
