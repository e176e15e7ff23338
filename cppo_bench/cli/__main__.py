from cppo_bench.cli import main

main()
