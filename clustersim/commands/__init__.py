"""CLI commands that live in their own modules (they pull in the real-run backend or the
calibration fitter): each module has ``add_parser(subparsers)``; ``cli.build_parser`` calls
them in the order of :data:`MODULES`.  Importing a command module must stay cheap: heavy
imports go inside the command function."""

MODULES = ("clustersim.commands.whatif", "clustersim.commands.run_real",
           "clustersim.commands.calibrate",
           "clustersim.commands.explore",
           "clustersim.commands.sensitivity",
           "clustersim.commands.sweep",
           "clustersim.commands.routes")
