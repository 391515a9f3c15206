from cronctl.cli.app import main

main()
