/* icpt_next_b.c - the library after icpt_next_a.so in the search order: its icpt_next_who is
 * the one RTLD_NEXT from icpt_next_a.so must find. tests layer. */
const char *icpt_next_who(void);

const char *icpt_next_who(void)
{
	return "b";
}
