#include "textflag.h"

// func int80Socket() int64
// socket(AF_INET, SOCK_STREAM, 0) through the i386 compat entry (int $0x80),
// where the syscall number for socket is 359, not 41.
TEXT ·int80Socket(SB),NOSPLIT,$0-8
	MOVL	$359, AX
	MOVL	$2, BX
	MOVL	$1, CX
	MOVL	$0, DX
	INT	$0x80
	MOVQ	AX, ret+0(FP)
	RET
