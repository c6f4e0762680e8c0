/* Feeds texts to the local engine's tokenizer (e5.c's tok_content, through e5_token_count), for
 * tests/unit/test_engine_text.py, which builds it with AddressSanitizer against a copy of e5.c.
 * usage: harness model.bin texts.bin, where texts.bin holds UTF-8 texts, each ended by a NUL byte.
 * Prints the number of texts read; an out-of-bounds access aborts with AddressSanitizer's report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "e5.h"

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s model.bin texts.bin\n", argv[0]); return 2; }
    e5_model *m = e5_load(argv[1]);
    if (!m) return 2;
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 2; }
    fseek(f, 0, SEEK_END); long size = ftell(f); fseek(f, 0, SEEK_SET);
    char *all = (char *)malloc((size_t)size + 1);
    if (fread(all, 1, (size_t)size, f) != (size_t)size) { perror(argv[2]); return 2; }
    all[size] = 0;
    fclose(f);
    int texts = 0;
    for (long at = 0; at < size; at += (long)strlen(all + at) + 1) {
        /* each text on its own heap block, so a write past its end is a write past a block */
        size_t n = strlen(all + at);
        char *text = (char *)malloc(n + 1);
        memcpy(text, all + at, n + 1);
        e5_token_count(m, text, 0);
        e5_token_count(m, text, 1);
        free(text);
        texts++;
    }
    printf("%d\n", texts);
    free(all);
    e5_free(m);
    return 0;
}
