/*
 * rand() from the kernel's random source, preloaded (LD_PRELOAD) into the Cyrus test servers.
 *
 * Debian's Cyrus 3.6 names each new mailbox with 24 characters of rand(), and no imapd process seeds
 * it: every process draws the same sequence, so two processes creating mailboxes collide. Mailboxes
 * with one id share their files (a mailbox seeded with messages is found empty) and their
 * annotations (a plain mailbox is refused DELETE as "SPECIAL-USE flag conflict"). See
 * tests/support/servers/cyrus.py.
 */
#include <stdlib.h>
#include <sys/random.h>

int rand(void)
{
    unsigned int value;
    if (getrandom(&value, sizeof value, 0) != (ssize_t)sizeof value)
        abort();
    return (int)(value & RAND_MAX);
}
