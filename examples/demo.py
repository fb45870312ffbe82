print("demo: coming with the compiler")
