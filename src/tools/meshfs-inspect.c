/* PLACEHOLDER: being written. */
#include <stdio.h>
int main(void) { fputs("meshfs-inspect: not written yet\n", stderr); return 2; }
