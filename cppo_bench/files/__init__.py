"""Files, read and written: the one reader of user-named paths (`userfiles`), bounded JSON
(`jsonio`), the link-refusing opener the run store and every writer use (`fs`), an output
folder written all-or-nothing (`outdir`), the run lock (`lock`) and the one line for an OS
refusal (`oserrors`). Below every package that touches a file; imports only `errors` and
`util`."""
