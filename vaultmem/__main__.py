from vaultmem.cli.main import main

main()
