/* test_map.c: util.c's Map (hashed names) against a plain array, through many random puts and
 * deletes: deletion shifts later entries back into the hole, which is where such tables break. */
#include <stdlib.h>

#include "tilec.h"
#include "unit.h"

enum { KEYS = 3000, OPS = 200000 };

int main(void)
{
    static char names[KEYS][16];
    static void *want[KEYS];
    for (int i = 0; i < KEYS; i++)
        snprintf(names[i], sizeof names[i], "k%d", i * 7919 % 100003);
    Map m = {0};
    unsigned seed = 12345;
    bool ok = true;
    size_t live = 0;
    for (int op = 0; op < OPS && ok; op++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)(seed >> 8) % KEYS;
        if ((seed >> 4) % 3) {
            if (!want[k])
                live++;
            want[k] = &names[k];
            map_put(&m, names[k], want[k]);
        } else {
            if (want[k])
                live--;
            want[k] = NULL;
            map_del(&m, names[k]);
        }
        if (op % 997 == 0 || op == OPS - 1)
            for (int i = 0; i < KEYS && ok; i++)
                ok = map_get(&m, names[i]) == want[i];
        ok = ok && m.n == live;
    }
    unit_check(ok, "map agrees with an array through puts and deletes", "after %zu live", live);
    unit_check(map_get(&m, "absent") == NULL, "a name never put is absent", "found");
    map_free(&m);
    unit_check(map_get(&m, "k0") == NULL && m.n == 0, "a freed map is empty", "not empty");
    return unit_exit();
}
