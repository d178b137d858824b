#include "textflag.h"

// func prefetchLines(p *byte, lines int)
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ  p+0(FP), SI
	MOVQ  lines+8(FP), CX
	TESTQ CX, CX
	JZ    done

line:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	DECQ       CX
	JNZ        line

done:
	RET
