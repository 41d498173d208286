from casstrace.cli.main import main

main()
