"""The ``simsrv`` command line."""
