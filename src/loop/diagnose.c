/* diagnose.c - root-cause classes of failed nodes (filled in by the next commit). */
